"""Word-alignment labelling shared by the dwa criterion and the aligner."""
