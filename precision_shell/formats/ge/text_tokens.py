"""The token path of the GE text parser: a regex tokenizer and a token state machine.

Reads anything protobuf's text format allows (several fields per line, `key: {`,
`<...>` blocks, `[a, b]` lists, `#` comments, adjacent and single-quoted strings, C
escapes, numbers in any spelling, unknown fields, which it skips) and reports errors
with line and column. `ge_text` runs its fast path on the same state and hands this
class whatever the fast path does not take; a whole file can also be read here alone.
"""

from __future__ import annotations

import re
from typing import Any

from precision_shell.errors import FormatError
from precision_shell.formats.ge.model import MAX_NESTING_DEPTH, ModelDef
from precision_shell.formats.ge.text_schema import (
    BOOLS,
    C_OCTAL,
    IDENT,
    K_BOOL,
    K_ENUM,
    K_FLOAT,
    K_INT,
    K_MAP,
    K_MSG,
    K_RAW,
    K_SKIP,
    K_STR,
    ROOT_SPEC,
    UNKNOWN_FIELD,
    parse_float,
    to_float32,
    unquote,
)

# Token-machine states; the fast path runs only in S_FIELD.
S_FIELD, S_AFTER_NAME, S_COLON, S_LIST, S_LIST_SEP, S_EXT_NAME = range(6)

_TOKEN = re.compile(
    r"""(?P<ws>[ \t\r\n\f\v]+)
    |(?P<comment>\#[^\n]*)
    |(?P<word>[A-Za-z_][0-9A-Za-z_+-]*|(?:[0-9+-]|\.[0-9])[0-9A-Za-z_.+-]*)
    |(?P<str>"[^"\n\\]*(?:\\.[^"\n\\]*)*"|'[^'\n\\]*(?:\\.[^'\n\\]*)*')
    |(?P<punct>[{}<>\[\]:,;])
    |(?P<badstr>["'])
    |(?P<bad>.)""",
    re.VERBOSE,
)


_SHOWN_LENGTH = 40
# Longer decimal numbers are out of every integer field's range (the longest, uint64, has 20).
_MAX_INT_TEXT = 40


def shown(token: str) -> str:
    """A token as error messages quote it; a long one is cut (a 5,000-digit number would
    otherwise fill the screen)."""
    if len(token) <= _SHOWN_LENGTH:
        return repr(token)
    return f"{token[:_SHOWN_LENGTH]!r}... ({len(token)} characters)"


class RestartInTokenMode(Exception):
    """A line starts with a string: it may continue the string the fast path just stored."""


class TokenReader:
    """Parser state (the open-message stack) and the token state machine that drives it."""

    def __init__(self, text: str, source: str, token_mode: bool) -> None:
        self.source = source
        self.text = text
        self.token_mode = token_mode
        # A frame: (parent spec, parent values, field name, field, open position, closer,
        # token state after the close).
        self.stack: list[tuple[Any, ...]] = []
        self.spec = ROOT_SPEC
        self.values: dict[str, Any] = {}
        self.state = S_FIELD
        self.pending: tuple[str, tuple[int, bool, Any], int] = ("", UNKNOWN_FIELD, 0)
        self.last_string: tuple[Any, ...] | None = None

    def error(self, position: int, problem: str) -> FormatError:
        line_start = self.text.rfind("\n", 0, position) + 1
        line = self.text.count("\n", 0, line_start) + 1
        column = position - line_start + 1
        return FormatError(self.source, f"line {line}, column {column}: {problem}")

    def too_deep(self, position: int) -> FormatError:
        return self.error(
            position, f"blocks nested more than {MAX_NESTING_DEPTH} deep; no GE graph nests so"
        )

    def finish_file(self) -> ModelDef:
        end = len(self.text)
        if self.state != S_FIELD:
            name = self.pending[0]
            expected = "']'" if self.state in (S_LIST, S_LIST_SEP) else "a value"
            raise self.error(end, f"unexpected end of file: expected {expected} for '{name}'")
        if self.stack:
            _, _, name, _, opened, closer, _ = self.stack[-1]
            opened_line = self.text.count("\n", 0, opened) + 1
            raise self.error(
                end,
                f"unexpected end of file: '{name}' opened at line {opened_line} is not closed "
                f"(expected '{closer}')",
            )
        return self.spec.finish(self.values)

    def tokens(self, text: str, start: int) -> None:
        """Feed every token of `text` (found at `start` in the file) to the state machine."""
        if self.state == S_FIELD and not self.token_mode:
            # The fast path may have stored values since the last string this path saw,
            # so a string opening this text cannot be told to continue it: a restart in
            # token mode settles it.
            self.last_string = None
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup
            assert kind is not None  # every alternative of _TOKEN is a named group
            if kind != "ws" and kind != "comment":
                self.token(kind, match.group(), start + match.start())

    def token(self, kind: str, text: str, position: int) -> None:
        if self.state == S_EXT_NAME:
            # "[some.extension]" or "[type.googleapis.com/x]": a name we never know
            if text == "]":
                self.pending = ("[extension]", UNKNOWN_FIELD, position)
                self.state = S_AFTER_NAME
            return
        if kind == "bad":
            raise self.error(position, f"unexpected character {shown(text)}")
        if kind == "badstr":
            raise self.error(position, "unterminated string")
        if kind != "str":
            self.last_string = None
        state = self.state
        is_punct = kind == "punct"
        if state == S_FIELD:
            if kind == "word" and IDENT.fullmatch(text):
                field = self.spec.fields.get(text, UNKNOWN_FIELD)
                self.pending = (text, field, position)
                self.state = S_AFTER_NAME
            elif is_punct and text in "}>":
                self.close(text, position)
            elif is_punct and text in ",;":
                pass
            elif is_punct and text == "[":
                self.state = S_EXT_NAME
            elif kind == "str" and self.last_string is not None:
                self.continue_string(text, position)
            elif kind == "str" and not self.token_mode:
                raise RestartInTokenMode
            else:
                raise self.error(position, f"expected a field name, got {shown(text)}")
        elif state == S_AFTER_NAME:
            if is_punct and text == ":":
                self.state = S_COLON
            elif is_punct and text in "{<":
                self.open(text, position, S_FIELD)
            else:
                name = self.pending[0]
                raise self.error(
                    position, f"expected ':' or '{{' after '{name}', got {shown(text)}"
                )
        elif state in (S_COLON, S_LIST):
            if is_punct and text in "{<":
                self.open(text, position, S_FIELD if state == S_COLON else S_LIST_SEP)
            elif is_punct and text == "[" and state == S_COLON:
                self.state = S_LIST
            elif is_punct and text == "]" and state == S_LIST:
                self.state = S_FIELD
            elif kind == "str" or kind == "word":
                self.scalar(kind, text, position)
                self.state = S_FIELD if state == S_COLON else S_LIST_SEP
            else:
                name = self.pending[0]
                raise self.error(position, f"expected a value for '{name}', got {shown(text)}")
        else:  # S_LIST_SEP
            if is_punct and text == ",":
                self.state = S_LIST
            elif is_punct and text == "]":
                self.state = S_FIELD
            elif kind == "str" and self.last_string is not None:
                self.continue_string(text, position)
            else:
                raise self.error(position, f"expected ',' or ']', got {shown(text)}")

    def open(self, opener: str, position: int, after: int) -> None:
        name, field, _ = self.pending
        if field[0] < K_MSG:
            raise self.error(position, f"'{name}' takes a value, not a '{opener}' block")
        if len(self.stack) >= MAX_NESTING_DEPTH:
            raise self.too_deep(position)
        closer = "}" if opener == "{" else ">"
        self.stack.append((self.spec, self.values, name, field, position, closer, after))
        self.spec = field[2]
        self.values = {}
        self.state = S_FIELD

    def close(self, closer: str, position: int) -> None:
        if not self.stack:
            raise self.error(position, f"unexpected '{closer}': no block is open")
        spec, values, name, field, opened, expected, after = self.stack[-1]
        if closer != expected:
            opened_line = self.text.count("\n", 0, opened) + 1
            raise self.error(
                position,
                f"expected '{expected}' to close '{name}' opened at line {opened_line}, "
                f"got '{closer}'",
            )
        self.stack.pop()
        value = self.spec.finish(self.values)
        if field[1]:
            if field[0] == K_MAP:
                values.setdefault(name, {})[value[0]] = value[1]
            else:
                values.setdefault(name, []).append(value)
        elif field[0] == K_MSG:
            values[name] = value
        self.spec = spec
        self.values = values
        self.state = after
        if after != S_FIELD:
            self.pending = (name, field, opened)

    def scalar(self, kind: str, text: str, position: int) -> None:
        name, field, _ = self.pending
        field_kind = field[0]
        if field_kind == K_SKIP:
            self.last_string = (None, name, field, b"") if kind == "str" else None
            return
        if field_kind >= K_MSG:
            raise self.error(position, f"expected '{{' to open '{name}', got {shown(text)}")
        if field_kind in (K_STR, K_RAW):
            if kind != "str":
                raise self.error(position, f"expected a string for '{name}', got {shown(text)}")
            raw = self.unquote(text, name, position)
            value: Any = raw.decode("utf-8", "replace") if field_kind == K_STR else raw
            self.last_string = (self.values, name, field, raw)
        else:
            value = self.convert(field, name, kind, text, position)
        if field[1]:
            self.values.setdefault(name, []).append(value)
        else:
            self.values[name] = value

    def convert(
        self, field: tuple[int, bool, Any], name: str, kind: str, text: str, position: int
    ) -> Any:
        field_kind = field[0]
        if kind == "word":
            try:
                if field_kind == K_INT:
                    return self.integer(field, name, text, position)
                if field_kind == K_FLOAT:
                    return to_float32(parse_float(text))
                if field_kind == K_BOOL:
                    return BOOLS[text]
                if field_kind == K_ENUM:
                    if IDENT.fullmatch(text):
                        return field[2].get(text, text)  # unknown names kept, not fatal
                    number = int(text, 0)
                    return field[2].get(str(number), str(number))
            except (ValueError, KeyError):
                pass
        expected = {K_INT: "an integer", K_FLOAT: "a number", K_BOOL: "true or false"}
        what = expected.get(field_kind, "an enum name or number")
        raise self.error(position, f"expected {what} for '{name}', got {shown(text)}")

    def integer(self, field: tuple[int, bool, Any], name: str, text: str, position: int) -> int:
        """An integer in any spelling protobuf takes, checked against the field's range.

        Raises ValueError for a token that is not an integer."""
        low, high = field[2]
        digits = text.lstrip("+-")
        if len(digits) > _MAX_INT_TEXT and digits.isascii() and digits.isdigit():
            number = None  # past any range; int() would refuse 4,300 digits anyway
        else:
            octal = C_OCTAL.fullmatch(text)
            number = int(f"{octal[1]}0o{octal[2]}" if octal else text, 0)
        if number is None or not low <= number <= high:
            raise self.error(
                position, f"integer {shown(text)} for '{name}' is out of range {low}..{high}"
            )
        return number

    def unquote(self, text: str, name: str, position: int) -> bytes:
        try:
            return unquote(text)
        except ValueError as exc:
            raise self.error(position, f"bad escape in the string for '{name}'") from exc

    def continue_string(self, text: str, position: int) -> None:
        assert self.last_string is not None  # callers check it
        values, name, field, raw = self.last_string
        raw += self.unquote(text, name, position)
        self.last_string = (values, name, field, raw)
        if values is None:
            return
        value = raw.decode("utf-8", "replace") if field[0] == K_STR else raw
        if field[1]:
            values[name][-1] = value
        else:
            values[name] = value
