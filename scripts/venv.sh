# Sourced by the scripts: with no virtual environment active, use the project's .venv (made by
# `make quickstart` / `make test`), so that a script works as the README writes it.
_veco_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z "${VIRTUAL_ENV:-}" && -x "$_veco_root/.venv/bin/python" ]]; then
  export PATH="$_veco_root/.venv/bin:$PATH"
fi
unset _veco_root
