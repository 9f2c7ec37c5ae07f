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
# Reinstall only when the package metadata changed since the last install.
stamp="$VENV/.precision_shell_install${extras:+_$extras}"
if [ ! -f "$stamp" ] || [ "$ROOT/setup.cfg" -nt "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  "$VENV_PY" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  "$VENV_PY" -m pip install --quiet -e "$spec"
  touch "$stamp"
fi
