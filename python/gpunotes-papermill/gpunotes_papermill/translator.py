"""GoTranslator: papermill's parameters as Go assignments (see the package's doc)."""
import contextvars
import math
import re

from papermill.engines import papermill_engines
from papermill.models import Parameter
from papermill.translators import Translator, papermill_translators

__all__ = ["GoTranslator"]

KERNEL_NAME = "gpunotes"
LANGUAGE = "go"


def _go_string(s):
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            raise ValueError(f"string parameter holds a lone surrogate U+{code:04X}, which Go cannot hold")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_type(values):
    """The Go element type of a homogeneous list of parameter values, or None."""
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if any(isinstance(v, bool) for v in values):
        return None
    if all(isinstance(v, int) for v in values):
        return "int"
    if all(isinstance(v, (int, float)) for v in values):
        return "float64"
    if all(isinstance(v, str) for v in values):
        return "string"
    return None


class GoTranslator(Translator):
    """Writes papermill parameters as Go assignments."""

    @classmethod
    def translate_str(cls, val):
        return _go_string(val)

    @classmethod
    def translate_escaped_str(cls, str_val):
        return _go_string(str(str_val))

    @classmethod
    def translate_none(cls, val):
        return "nil"

    @classmethod
    def translate_float(cls, val):
        if math.isnan(val) or math.isinf(val):
            raise ValueError(f"parameter value {val!r} has no Go literal; pass it as a string and parse it in the notebook")
        return repr(val)

    @classmethod
    def translate_list(cls, val):
        elem = _go_type(val) if val else "interface{}"
        if elem is None:
            raise ValueError(f"list parameter {val!r}: Go needs the elements of one type (bool, int, float64 or string)")
        return f"[]{elem}{{" + ", ".join(cls._elem(v, elem) for v in val) + "}"

    @classmethod
    def translate_dict(cls, val):
        if not all(isinstance(k, str) for k in val):
            raise ValueError(f"dict parameter {val!r}: Go maps from papermill need string keys")
        values = list(val.values())
        elem = _go_type(values) if values else "interface{}"
        if elem is None:
            raise ValueError(f"dict parameter {val!r}: Go needs the values of one type (bool, int, float64 or string)")
        items = ", ".join(f"{_go_string(k)}: {cls._elem(v, elem)}" for k, v in val.items())
        return f"map[string]{elem}{{{items}}}"

    @classmethod
    def _elem(cls, v, elem):
        if elem == "float64" and isinstance(v, int):
            return f"{v}.0"
        return cls.translate(v)

    @classmethod
    def comment(cls, cmt_str):
        return f"// {cmt_str}".strip()

    @classmethod
    def assign(cls, name, str_val):
        return f"{name} = {str_val}"

    @classmethod
    def codify(cls, parameters, comment="Parameters"):
        declared = _declared(_notebook.get())
        _notebook.set(None)
        lines = [cls.comment(comment)]
        for name, val in parameters.items():
            if declared is None:
                lines.append(cls.assign(name, cls.translate(val)))
                continue
            if name not in declared:
                raise ValueError(f"parameter {name} is not declared in the parameters cell "
                                 f"(it declares: {', '.join(sorted(declared))})")
            lines.append(cls.assign(name, cls._value(val, declared[name])))
        return "\n".join(lines) + "\n"

    @classmethod
    def _value(cls, val, is_string):
        """Renders val for a variable the parameters cell declares, as gpunotes run does."""
        if is_string:
            text = val if isinstance(val, str) else cls.translate(val)
            return text if _is_go_string(text) else _go_string(text)
        if isinstance(val, str):
            return val if val.strip() and "\n" not in val else _go_string(val)
        return cls.translate(val)

    # `Name := value` or `var Name [type] [= value]`, each with an optional `// help` comment.
    _DEFINE = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*:=\s*(?P<value>.*?)\s*(?://\s*(?P<help>.*))?$")
    _VAR = re.compile(r"^\s*var\s+(?P<name>[A-Za-z_]\w*)\s*(?P<type>[^=/]*?)\s*(?:=\s*(?P<value>.*?))?\s*(?://\s*(?P<help>.*))?$")

    @classmethod
    def inspect(cls, parameters_cell):
        """The parameters the cell declares, for `papermill --help-notebook`."""
        params = []
        for line in parameters_cell.source.splitlines():
            m = cls._VAR.match(line) or cls._DEFINE.match(line)
            if not m:
                continue
            d = m.groupdict()
            value = d.get("value") or ""
            typ = (d.get("type") or "").strip() or _literal_type(value)
            params.append(Parameter(name=d["name"], inferred_type_name=typ or "None",
                                    default=value or "None", help=(d.get("help") or "").strip()))
        return params


def _literal_type(value):
    v = value.strip()
    if v in ("true", "false"):
        return "bool"
    if v.startswith('"') or v.startswith("`"):
        return "string"
    if re.fullmatch(r"[+-]?\d[\d_]*", v):
        return "int"
    if re.fullmatch(r"[+-]?(\d[\d_]*\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)", v):
        return "float64"
    return ""


_STRING_LIT = re.compile(r'"(?:[^"\\\n]|\\.)*"|`[^`]*`')


def _is_go_string(text):
    return _STRING_LIT.fullmatch(text.strip()) is not None


_IDENT_LIST = r"[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*"
_DEFINE_LINE = re.compile(rf"^\s*(?P<names>{_IDENT_LIST})\s*:=\s*(?P<values>.*?)\s*(?://.*)?$")
_VAR_SPEC = re.compile(rf"^\s*(?:var\s+)?(?P<names>{_IDENT_LIST})\s*(?P<type>[^=/]*?)\s*(?:=\s*(?P<values>.*?))?\s*(?://.*)?$")


def _declared(nb):
    """The variables the notebook's "parameters" cell declares, each with whether it is a string
    (initialized with a string literal or declared string), or None without such a cell."""
    if nb is None:
        return None
    cell = next((c for c in nb.cells if c.get("cell_type") == "code"
                 and "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if cell is None:
        return None
    src = cell.source if isinstance(cell.source, str) else "".join(cell.source)
    out = {}
    in_block = False
    for line in src.splitlines():
        stripped = line.strip()
        if in_block:
            if stripped.startswith(")"):
                in_block = False
                continue
            m = _VAR_SPEC.match(line)
        elif re.match(r"^var\s*\($", stripped):
            in_block = True
            continue
        elif stripped.startswith("var "):
            m = _VAR_SPEC.match(line)
        else:
            m = _DEFINE_LINE.match(line)
        if not m:
            continue
        names = [n.strip() for n in m.group("names").split(",")]
        typ = (m.groupdict().get("type") or "").strip()
        values = [v.strip() for v in (m.group("values") or "").split(",")] if m.group("values") else []
        for i, name in enumerate(names):
            if name == "_":
                continue
            if typ:
                out[name] = typ == "string"
            else:
                out[name] = len(values) == len(names) and _is_go_string(values[i])
    return out


# The notebook papermill is parameterizing: parameterize_notebook asks the engines registry for
# the notebook's language right before it calls the translator, with the notebook in hand.
_notebook = contextvars.ContextVar("gpunotes_papermill_notebook", default=None)
_nb_language = papermill_engines.nb_language


def _noting_nb_language(engine_name, nb, language=None):
    _notebook.set(nb)
    return _nb_language(engine_name, nb, language)


if not getattr(papermill_engines.nb_language, "_gpunotes", False):
    _noting_nb_language._gpunotes = True
    papermill_engines.nb_language = _noting_nb_language

papermill_translators.register(KERNEL_NAME, GoTranslator)
papermill_translators.register(LANGUAGE, GoTranslator)
