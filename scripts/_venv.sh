# Shared by scripts/demo and scripts/test: create or update .venv and install the package.
# Usage: . scripts/_venv.sh [EXTRAS]   (sets VENV_PY)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PRECISION_SHELL_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
VENV_PY="$VENV/bin/python"
extras="${1:-}"
spec="$ROOT"
[ -n "$extras" ] && spec="$ROOT[$extras]"
# Reinstall only when the package metadata or the C extension's source changed since the last
# install (an editable install builds the extension in place).
stamp="$VENV/.precision_shell_install${extras:+_$extras}"
fresh() {
  [ -f "$1" ] || return 1
  for f in setup.cfg pyproject.toml setup.py precision_shell/compare/metrics/_passes.c; do
    [ "$ROOT/$f" -nt "$1" ] && return 1
  done
  return 0
}
# an install with the test extras is also a plain install
if ! fresh "$stamp" && ! { [ -z "$extras" ] && fresh "$VENV/.precision_shell_install_test"; }; then
  "$VENV_PY" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  "$VENV_PY" -m pip install --quiet -e "$spec"
  touch "$stamp"
fi
