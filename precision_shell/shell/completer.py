"""Tab completion: commands and aliases, each command's flags, op names, tensor files, paths.

Op names come from a `NameSource` built once per workspace index (a sorted list for prefix
lookups by bisection, plus a lower-cased copy for substring search), so a keystroke never
rebuilds anything. The REPL wraps this in a `ThreadedCompleter`.
"""

from __future__ import annotations

import bisect
import shlex
from collections.abc import Callable, Iterable, Iterator

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from precision_shell.shell.registry import REGISTRY, Command, Registry

MAX_COMPLETIONS = 200


class NameSource:
    """Sorted names with fast prefix and bounded substring matches."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(set(names))
        self._lower = [n.lower() for n in self.names]

    def matching(self, text: str, limit: int = MAX_COMPLETIONS) -> list[str]:
        lo = bisect.bisect_left(self.names, text)
        found: list[str] = []
        for name in self.names[lo:]:
            if not name.startswith(text) or len(found) >= limit:
                break
            found.append(name)
        if len(found) < limit and text:
            needle = text.lower()
            seen = set(found)
            for name, low in zip(self.names, self._lower, strict=True):
                if needle in low and name not in seen:
                    found.append(name)
                    if len(found) >= limit:
                        break
        return found


def _current_words(text: str) -> tuple[list[str], str]:
    """Complete words before the cursor and the partial word under it (quotes tolerated)."""
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    if text and not text[-1].isspace() and words:
        return words[:-1], words[-1]
    return words, ""


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
        text = document.text_before_cursor.lstrip()
        words, partial = _current_words(text)
        if not words:
            for name in self.registry.all_names():
                if name.startswith(partial):
                    cmd = self.registry.get(name)
                    yield Completion(name, -len(partial), display_meta=cmd.summary if cmd else "")
            return
        cmd = self.registry.get(words[0])
        if cmd is None:
            return
        kind = self._value_kind(cmd, words[1:])
        if partial.startswith("-") and kind is None:
            for flag, help_text in cmd.flags():
                if flag.startswith(partial):
                    yield Completion(flag, -len(partial), display_meta=help_text)
            return
        yield from self._values(kind, partial, document)

    def _value_kind(self, cmd: Command, args: list[str]) -> str | None:
        """What the word under the cursor is: a flag's value or the next positional."""
        if args and args[-1].startswith("-"):
            arg = cmd.argument_for_flag(args[-1])
            if arg is not None and arg.takes_value:
                return arg.complete
        positionals = cmd.positionals()
        used = 0
        skip = False
        for word in args:
            if skip:
                skip = False
                continue
            if word.startswith("-"):
                arg = cmd.argument_for_flag(word)
                skip = bool(arg and arg.takes_value)
                continue
            used += 1
        if positionals:
            pos = positionals[min(used, len(positionals) - 1)]
            if used < len(positionals) or pos.options.get("nargs") in ("*", "+", "..."):
                return pos.complete
        return None

    def _values(self, kind: str | None, partial: str, document: Document) -> Iterator[Completion]:
        if kind == "path":
            sub = Document(partial, len(partial))
            yield from self.paths.get_completions(sub, CompleteEvent())
            return
        sources = []
        if kind in ("op", "tensor"):
            sources.append((self.op_names(), "op"))
        if kind == "tensor":
            sources.append((self.tensor_names(), "file"))
        if kind == "command":
            sources.append((NameSource(self.registry.all_names()), "command"))
        for source, meta in sources:
            if source is None:
                continue
            for name in source.matching(partial):
                yield Completion(_quote(name), -len(partial), display=name, display_meta=meta)


def _quote(name: str) -> str:
    return shlex.quote(name) if any(c.isspace() or c in "'\"" for c in name) else name
