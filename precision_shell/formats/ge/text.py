"""Fast parser for GE graph dumps in protobuf text format (`ge_proto_<N>_<stage>.txt`).

Real dumps reach 100+ MB, and protobuf's own `text_format.Parse` reads ~3 MB/s, so
this module reads the text itself, straight into the `ge_model` dataclasses.

Two paths share one parser state. The fast path handles the lines `text_format`
prints (`key: value`, `key {`, `}`: one field per line), driven by a schema derived
once from the `ge_proto` descriptors. Any other line (several fields on one line,
`<>` blocks, `[a, b]` lists, comments, escapes it cannot take at once, unknown fields,
errors) goes through a regex tokenizer and a token state machine, which also carries
constructs spread over several lines. A file with a string continued on the next
line is read in token mode throughout. Correctness is defined by protobuf: the
tests compare against `text_format.Parse` + `ge_message.model_from_message`.
"""

from __future__ import annotations

import gc
import re

from precision_shell.formats.ge.model import MAX_NESTING_DEPTH, ModelDef
from precision_shell.formats.ge.text_schema import (
    BOOLS,
    K_BOOL,
    K_ENUM,
    K_FLOAT,
    K_INT,
    K_MAP,
    K_MSG,
    K_STR,
    MISSING,
    PLAIN_QUOTED,
    int64_list,
    list_value,
    member_value,
    plain_int,
    plain_string,
    to_float32,
)
from precision_shell.formats.ge.text_tokens import S_FIELD, RestartInTokenMode, TokenReader

__all__ = ["parse_ge_text", "to_float32"]

# The fast path's unit, one match each: a whole attr entry holding one plain value or a
# list of scalars, a whole shape, a `}` or `name {` line, a `name: "plain string"` line,
# another `name: value` line, or else any line (indent dropped). Plain strings have no
# escapes; the rest is checked in Python and, if in doubt, re-read by the token path.
_BLOCK = re.compile(
    r"""[ \t]*(?:
      attr\ \{\n[ \t]*key:\ "([^"\\\n]*)"\n[ \t]*value\ \{\n[ \t]*(?:
         s:\ "([^"\\\n]*)"\n
        |([a-z]+):\ ([^\n]*)\n
        |list\ \{\n(?:
           ((?:[ \t]*s:\ "[^"\\\n]*"\n)+)(?:[ \t]*val_type:\ VT_LIST_STRING\n)?[ \t]*\}\n
          |((?:[ \t]*i:\ -?(?:0|[1-9][0-9]{0,18})\n)+)(?:[ \t]*val_type:\ VT_LIST_INT\n)?[ \t]*\}\n
          |((?:[ \t]*[a-z_]+:\ [^\n]*\n)*)[ \t]*\}\n
        )
      )[ \t]*\}\n[ \t]*\}\n
     |shape\ \{\n((?:[ \t]*dim:\ -?(?:0|[1-9][0-9]{0,18})\n)*)[ \t]*\}\n
     |\}\n
     |([a-z_]+)(?:\ \{\n|:\ "([^"\\\n]*)"\n|:\ ([^\n]*)\n)
     |([^\n]*)\n?
    )""",
    re.VERBOSE,
)
G_ATTR_STRING = 2  # group 1: the attr key, in every G_ATTR_* match
G_ATTR_VALUE = 4  # group 3: the AttrDef member
G_ATTR_STRINGS, G_ATTR_INTS, G_ATTR_LIST = 5, 6, 7
G_SHAPE = 8
G_CLOSE = None  # the `}` line is the only unit without a group
G_OPEN = 9  # group 9 is also the field name of G_STRING and G_SCALAR
G_STRING, G_SCALAR, G_LINE = 10, 11, 12
# strings up to this long are shared (see `_TextParser.parse`)
_SHARED_MAX_LENGTH = 32


def parse_ge_text(text: str, source: str = "<text>") -> ModelDef:
    """Parse a GE dump in protobuf text format; errors name `source`, line and column."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    # The parse allocates millions of dicts and lists but never a reference cycle:
    # cyclic GC passes over them would cost ~40% of the time for nothing.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            return _TextParser(text, source, token_mode=False).parse()
        except RestartInTokenMode:
            return _TextParser(text, source, token_mode=True).parse()
    finally:
        if gc_was_enabled:
            gc.enable()


class _TextParser(TokenReader):
    """One parse: the fast block loop, falling back to the token path it inherits."""

    def parse(self) -> ModelDef:
        if self.token_mode:
            self.tokens(self.text, 0)
            return self.finish_file()
        stack = self.stack
        spec = self.spec
        fields = spec.fields
        values = self.values
        # One shared str per distinct attr key and short string: a 50k-op dump repeats
        # the same few hundred of them millions of times.
        shared: dict[str, str] = {}
        fast = True
        for match in _BLOCK.finditer(self.text):
            group = match.lastindex
            if not fast:
                pass
            elif group == G_STRING:
                name, value = match.group(G_OPEN, G_STRING)
                field = fields.get(name)
                if field is not None and field[0] == K_STR:
                    if len(value) <= _SHARED_MAX_LENGTH:
                        value = shared.setdefault(value, value)
                    if field[1]:
                        items = values.get(name)
                        if items is None:
                            values[name] = [value]
                        else:
                            items.append(value)
                    else:
                        values[name] = value
                    continue
            elif group is G_CLOSE:
                if stack and stack[-1][5] == "}":
                    value = spec.finish(values)
                    spec, values, name, field, position, _, after = stack.pop()
                    fields = spec.fields
                    if field[1]:
                        if field[0] == K_MAP:
                            mapping = values.get(name)
                            if mapping is None:
                                values[name] = {value[0]: value[1]}
                            else:
                                mapping[value[0]] = value[1]
                        else:
                            items = values.get(name)
                            if items is None:
                                values[name] = [value]
                            else:
                                items.append(value)
                    elif field[0] == K_MSG:
                        values[name] = value
                    if after != S_FIELD:
                        self.state = after
                        self.pending = (name, field, position)
                        fast = False
                    continue
            elif group <= G_ATTR_LIST:
                if spec.has_attr_map:
                    if group == G_ATTR_STRING:
                        key, value = match.group(1, 2)
                        if len(value) <= _SHARED_MAX_LENGTH:
                            value = shared.setdefault(value, value)
                    elif group == G_ATTR_VALUE:
                        key, member, raw = match.group(1, 3, 4)
                        value = member_value(member, raw)
                    elif group == G_ATTR_INTS:
                        key, items = match.group(1, 6)
                        value = int64_list(items)
                    elif group == G_ATTR_STRINGS:
                        key, items = match.group(1, 5)
                        value = PLAIN_QUOTED.findall(items)
                    else:
                        key, items = match.group(1, 7)
                        value = list_value(items)
                    if value is not MISSING:
                        key = shared.setdefault(key, key)
                        mapping = values.get("attr")
                        if mapping is None:
                            values["attr"] = {key: value}
                        else:
                            mapping[key] = value
                        continue
            elif group == G_SCALAR:
                name, raw = match.group(G_OPEN, G_SCALAR)
                field = fields.get(name)
                if field is not None:
                    kind = field[0]
                    if kind == K_INT:
                        value = plain_int(raw, *field[2])
                    elif kind == K_ENUM:
                        value = field[2].get(raw, MISSING)
                    elif kind == K_STR:
                        value = plain_string(raw)
                    elif kind == K_FLOAT:
                        value = member_value("f", raw)
                    elif kind == K_BOOL:
                        value = BOOLS.get(raw, MISSING)
                    else:
                        value = MISSING
                    if value is not MISSING:
                        if field[1]:
                            items = values.get(name)
                            if items is None:
                                values[name] = [value]
                            else:
                                items.append(value)
                        else:
                            values[name] = value
                        continue
            elif group == G_OPEN:
                name = match.group(G_OPEN)
                field = fields.get(name)
                if field is not None and field[0] >= K_MSG:
                    if len(stack) >= MAX_NESTING_DEPTH:
                        raise self.too_deep(match.start(G_OPEN))
                    stack.append((spec, values, name, field, match.start(G_OPEN), "}", S_FIELD))
                    spec = field[2]
                    fields = spec.fields
                    values = {}
                    continue
            elif group == G_SHAPE:
                if spec.has_shape:
                    dims = int64_list(match.group(G_SHAPE))
                    if dims is not MISSING:
                        values["shape"] = tuple(dims)
                        continue
            elif not match.group(G_LINE):
                continue
            self.spec = spec
            self.values = values
            self.tokens(match.group(), match.start())
            spec = self.spec
            fields = spec.fields
            values = self.values
            fast = self.state == S_FIELD
        self.spec = spec
        self.values = values
        return self.finish_file()
