"""Tab completion: commands and aliases, each command's flags, op names, tensor files, paths.

Op names come from a `NameSource` built once per workspace index (a sorted list for prefix
lookups by bisection, plus one lower-cased blob searched with `str.find` for substrings), so
a keystroke never rebuilds anything. The REPL wraps this in a `ThreadedCompleter`.
"""

from __future__ import annotations

import bisect
import shlex
from collections.abc import Callable, Iterable, Iterator

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from precision_shell.shell.dispatcher import Dispatcher
from precision_shell.shell.registry import REGISTRY, Argument, Command, Registry

MAX_COMPLETIONS = 200


class NameSource:
    """Sorted names with fast prefix and bounded substring matches."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(set(names))
        # One newline-joined lower-cased blob: substring search runs in C (`str.find`) instead of
        # a Python loop over every name; `_starts` maps a hit back to its name by bisection.
        lowered = [n.lower().replace("\n", " ") for n in self.names]
        self._starts: list[int] = []
        offset = 0
        for low in lowered:
            self._starts.append(offset)
            offset += len(low) + 1
        self._blob = "\n".join(lowered)

    def matching(self, text: str, limit: int = MAX_COMPLETIONS) -> list[str]:
        """Names starting with `text` (case-sensitive) first, then names containing it (any case)."""
        lo = bisect.bisect_left(self.names, text)
        found: list[str] = []
        for name in self.names[lo:]:
            if not name.startswith(text) or len(found) >= limit:
                break
            found.append(name)
        needle = text.lower()
        if len(found) >= limit or not needle or "\n" in needle:
            return found
        seen = set(found)
        pos = self._blob.find(needle)
        while pos != -1 and len(found) < limit:
            index = bisect.bisect_right(self._starts, pos) - 1
            name = self.names[index]
            if name not in seen:
                found.append(name)
            next_start = index + 1
            if next_start >= len(self._starts):
                break
            pos = self._blob.find(needle, self._starts[next_start])
        return found


def _words_before_cursor(text: str) -> tuple[list[str], str, int]:
    """The complete words before the cursor, the (unquoted) word under it and that word's
    length as typed (quotes included), so a completion replaces exactly what was typed.

    Follows shlex's POSIX rules closely enough for completion, and tolerates an open quote.
    """
    words: list[str] = []
    current: list[str] = []
    start: int | None = None
    quote = ""
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            current.append(ch)
            escaped = False
        elif quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                escaped = True
            else:
                current.append(ch)
        elif ch.isspace():
            if start is not None:
                words.append("".join(current))
                current, start = [], None
        else:
            if start is None:
                start = i
            if ch in "'\"":
                quote = ch
            elif ch == "\\":
                escaped = True
            else:
                current.append(ch)
    if start is None:
        return words, "", 0
    return words, "".join(current), len(text) - start


def _looks_like_flag(word: str) -> bool:
    if len(word) < 2 or not word.startswith("-"):
        return False
    try:
        float(word)  # a negative number is a value, as argparse sees it
        return False
    except ValueError:
        return True


def _value_count(arg: Argument | None) -> int:
    """How many words after this flag are its values (argparse's nargs, roughly)."""
    if arg is None or not arg.takes_value:
        return 0
    nargs = arg.options.get("nargs")
    return nargs if isinstance(nargs, int) else 1


class ShellCompleter(Completer):
    def __init__(
        self,
        registry: Registry | None = None,
        op_names: Callable[[], NameSource | None] = lambda: None,
        tensor_names: Callable[[], NameSource | None] = lambda: None,
    ) -> None:
        self.registry = registry or REGISTRY
        self.op_names = op_names
        self.tensor_names = tensor_names
        self.paths = PathCompleter(expanduser=True)

    def get_completions(self, document: Document, event: CompleteEvent) -> Iterator[Completion]:
        words, partial, typed = _words_before_cursor(document.text_before_cursor)
        if not words:
            yield from self._command_names(partial, typed)
            return
        cmd = self.registry.get(words[0])
        if cmd is None or cmd.raw_args:
            return
        is_flag_value, kind = self._value_kind(cmd, words[1:])
        if partial.startswith("-") and not is_flag_value:
            for flag, help_text in cmd.flags():
                if flag.startswith(partial):
                    yield Completion(flag, -typed, display_meta=help_text)
            return
        yield from self._values(kind, partial, typed)

    def _command_names(self, partial: str, typed: int) -> Iterator[Completion]:
        names = sorted({*self.registry.all_names(), *Dispatcher.EXIT_WORDS})
        for name in names:
            if name.startswith(partial):
                cmd = self.registry.get(name)
                meta = cmd.summary if cmd else "leave the shell"
                yield Completion(name, -typed, display_meta=meta)

    def _value_kind(self, cmd: Command, args: list[str]) -> tuple[bool, str | None]:
        """Whether the word under the cursor is a flag's value, and what it completes as
        (a flag's or the next positional's `complete=`)."""
        pending = 0
        pending_kind: str | None = None
        used = 0
        for word in args:
            if pending:
                pending -= 1
                continue
            if _looks_like_flag(word):
                arg = cmd.argument_for_flag(word)
                pending = _value_count(arg)
                pending_kind = arg.complete if arg else None
                continue
            used += 1
        if pending:
            return True, pending_kind
        positionals = cmd.positionals()
        if positionals:
            pos = positionals[min(used, len(positionals) - 1)]
            if used < len(positionals) or pos.options.get("nargs") in ("*", "+", "..."):
                return False, pos.complete
        return False, None

    def _values(self, kind: str | None, partial: str, typed: int) -> Iterator[Completion]:
        if kind == "path":
            # PathCompleter inserts the rest of the name at the cursor (start_position 0).
            sub = Document(partial, len(partial))
            yield from self.paths.get_completions(sub, CompleteEvent())
            return
        if kind == "command":
            # Prefix only, like the first word: "help l" should not offer "help" for its "l".
            for name in self.registry.all_names():
                if name.startswith(partial):
                    yield Completion(name, -typed, display_meta="command")
            return
        sources: list[tuple[NameSource | None, str]] = []
        if kind in ("op", "tensor"):
            sources.append((self.op_names(), "op"))
        if kind == "tensor":
            sources.append((self.tensor_names(), "file"))
        for source, meta in sources:
            if source is None:
                continue
            for name in source.matching(partial):
                yield Completion(_quote(name), -typed, display=name, display_meta=meta)


def _quote(name: str) -> str:
    return shlex.quote(name) if any(c.isspace() or c in "'\"\\" for c in name) else name
