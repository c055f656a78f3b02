"""Code a grammar accepts and the language's compiler refuses: the "early errors" (issue 35).

tree-sitter's grammars are context-free: `return` parses anywhere a statement may stand, and
`break` anywhere too. The languages refuse them outside their construct, before running
anything (JavaScript's "early errors", CPython's compiler):

* `return` outside a function (in JavaScript allowed at the top of a CommonJS file, which
  Node wraps in a function; refused in an ES module: `SyntaxError: Illegal return statement`);
* `break` outside a loop or `switch` (a labelled `break` outside a statement of that label),
  `continue` outside a loop;
* `yield` outside a generator (Python: outside a function), `await` outside an async
  function (allowed at the top of an ES module);
* JavaScript: a name declared twice in one scope (`const` twice, `let` beside a `var` that
  hoists through its block, a `catch` parameter, a `switch`'s cases, a `for (let ...)`
  head; grammars/js_declarations.py) or exported twice; `let`/`const`/`class` as the lone
  body of an `if` or a loop; `const x;`;
  `try` without `catch` or `finally`; an empty slot in an argument list or an object
  (`f(, a)`); an assignment or an arrow function as an operand (`a && b = c`); a parameter
  that is no name, or named twice where that is forbidden (strict code, arrow functions,
  methods, lists with defaults or patterns); a second constructor; a reserved word as a name (`case(`); a property
  where a declaration binds a name; `import`/`export` in a CommonJS file. Python:
  `nonlocal` outside a function,
  a keyword argument repeated or followed by a positional one, a parameter named twice, a
  statement above a `from __future__` import;
* both: `try` without a handler (the grammars accept it).

A JavaScript file's module kind is Node's where the file's name (`.mjs`, `.cjs`) or its
package (the nearest package.json's `"type"`, which the workspace index reads) says it
(`declared_module_kind`; TreeSitterConstraint.for_module_kind), else read from the text
(`module_kind`). A file with neither `import`/`export` nor `require(`/`module.exports` is
judged as a module (a top-level `return` refused, a top-level `await` let through), as a
browser or a bundler would.

Judged on tree-sitter's tree by walking each such node's ancestors up to its function, so
no compiler is run, and only for the nodes that overlap the middle, or lie in a construct
whose header the middle wrote: the rest of the file is not the middle's doing. An error on
such a node that the empty hole has too is still the middle's to repair (the final check,
grammars/constraint.py), but for a `try` being typed. A node inside an ERROR is skipped
(its ancestors are the parser's guess), and where the window may start inside a block
(`Window.starts_at_top_level` false) the top of the window is not the top of the file, so
nothing there is refused.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Callable, Iterator, Optional, Union

import tree_sitter as ts

from .js_declarations import declared, exported_twice, loop_head_redeclared, pattern_names, redeclared

# JavaScript's module kinds: an ES module, a CommonJS file, or a file with neither mark.
MODULE, COMMONJS, UNKNOWN = "module", "commonjs", "unknown"
_ESM = re.compile(r"^[ \t]*(import[ \t]*[\w*{'\"]|import\.meta\b|export[ \t]+(default|const|let|var|function|class|async|\{|\*))", re.M)
_CJS = re.compile(r"\brequire[ \t]*\(|\bmodule\.exports\b|\bexports\.[\w$]+[ \t]*=")


def module_kind(text: str) -> str:
    """How Node would load the file: top-level `import`/`export` lines make an ES module,
    `require(`/`module.exports` without them a CommonJS file (a regular expression over the
    whole text, which the window may not reach: imports stand at the top of a file)."""
    if _ESM.search(text):
        return MODULE
    return COMMONJS if _CJS.search(text) else UNKNOWN


EXTENSION_KINDS = {".mjs": MODULE, ".cjs": COMMONJS}
PACKAGE_TYPES = {"module": MODULE, "commonjs": COMMONJS}


def declared_module_kind(filename: Optional[str], package_type: Optional[str] = None) -> Optional[str]:
    """How Node loads a file, where the file's name or its package says so: `.mjs` an ES
    module and `.cjs` a CommonJS file whatever the package says, else the `"type"` of the
    nearest package.json (`package_type`: "module" or "commonjs"); None where neither
    decides (no type, an unknown one: the text is read instead, `module_kind`). Only the
    name is looked at: reading a package.json is the caller's (the workspace index's)."""
    if filename:
        by_extension = EXTENSION_KINDS.get(PurePath(filename).suffix)
        if by_extension is not None:
            return by_extension
    return PACKAGE_TYPES.get(package_type or "")


@dataclass(frozen=True)
class EarlyError:
    start: int
    end: int
    message: str
    # True for a `try` being typed (its block still open after the middle): the final
    # check lets it through where the empty hole has it too. Nothing else is excused.
    excusable: bool = False


@dataclass(frozen=True)
class Rules:
    """One language's node types for the checks."""

    functions: frozenset[str]  # scopes `return`, `yield` and `await` belong to
    barriers: frozenset[str]  # where the search for a loop, a label or a function stops
    loops: frozenset[str]
    breakable: frozenset[str]  # loops and `switch`
    checked: str  # a query capturing the nodes to judge as @node


JS_FUNCTIONS = frozenset({"function_declaration", "function_expression", "function", "arrow_function", "method_definition",
                          "generator_function", "generator_function_declaration"})
LEXICAL = ("lexical_declaration", "class_declaration")
DECLARATIONS = LEXICAL + ("variable_declaration", "function_declaration", "generator_function_declaration")
JS_LOOPS = frozenset({"for_statement", "for_in_statement", "while_statement", "do_statement"})
JAVASCRIPT = Rules(
    functions=JS_FUNCTIONS,
    # A class's static block is a function of its own for `return`/`break` (refused in it).
    barriers=JS_FUNCTIONS | {"class_static_block", "class_body"},
    loops=JS_LOOPS,
    breakable=JS_LOOPS | {"switch_statement"},
    checked="""[(return_statement) (break_statement) (continue_statement) (yield_expression) (await_expression)
                (lexical_declaration) (class_declaration) (function_declaration) (generator_function_declaration)
                (import_statement) (export_statement) (formal_parameters)
                (try_statement) (if_statement) (else_clause) (for_statement) (for_in_statement) (while_statement)
                (do_statement) (labeled_statement) (binary_expression) (unary_expression)
                (method_definition) (variable_declaration) (identifier) (shorthand_property_identifier)
                (shorthand_property_identifier_pattern) ","] @node""",
)
PY_FUNCTIONS = frozenset({"function_definition", "lambda"})
PY_LOOPS = frozenset({"for_statement", "while_statement"})
PYTHON = Rules(
    functions=PY_FUNCTIONS,
    barriers=PY_FUNCTIONS | {"class_definition"},
    loops=PY_LOOPS,
    breakable=PY_LOOPS,
    checked="""[(return_statement) (break_statement) (continue_statement) (yield) (await) (nonlocal_statement)
                (argument_list) (parameters) (lambda_parameters) (try_statement)] @node
               (module (_) @node)""",
)
# Constructs whose header a middle may write: the code below it changes context (a `def`
# line replaced by `class X:` puts the body's `yield` outside any function, a `for` line
# replaced by `if r < 0:` the body's `continue` outside any loop).
DEFINITIONS = {
    "javascript": """[(function_declaration) (function_expression) (generator_function_declaration) (generator_function)
                      (method_definition) (arrow_function) (class_declaration) (if_statement) (for_statement)
                      (for_in_statement) (while_statement) (do_statement) (switch_statement) (labeled_statement)] @node""",
    "python": "[(function_definition) (class_definition) (if_statement) (for_statement) (while_statement) (with_statement)] @node",
}
RULES = {"javascript": JAVASCRIPT, "python": PYTHON}

_queries: dict[tuple[str, str], ts.Query] = {}


def _query(language: str, ts_language: ts.Language, text: str) -> ts.Query:
    key = (language, text)
    if key not in _queries:  # one Language per grammar and process (registry.py)
        _queries[key] = ts.Query(ts_language, text)
    return _queries[key]


def _captured(query: ts.Query, root: ts.Node, lo: int, hi: int) -> list[ts.Node]:
    cursor = ts.QueryCursor(query)
    cursor.set_byte_range(lo, hi)
    return [node for nodes in cursor.captures(root).values() for node in nodes if node.end_byte > lo and node.start_byte < hi]


def _judged_end(language: str, ts_language: ts.Language, root: ts.Node, lo: int, hi: int) -> int:
    """`hi`, or the end of the last construct whose header starts in the middle."""
    for node in _captured(_query(language, ts_language, DEFINITIONS[language]), root, lo, hi):
        if node.start_byte >= lo:
            hi = max(hi, node.end_byte)
    return hi


def early_errors(language: str, ts_language: ts.Language, root: ts.Node, lo: int, hi: int, kind: str = UNKNOWN,
                 top_level_known: Callable[[], bool] = lambda: True, middle_end: Optional[int] = None) -> list[EarlyError]:
    """The early errors of the checked nodes that overlap [lo, hi) (the middle's bytes);
    [] for a language without rules. `kind`: the JavaScript module kind (`module_kind`);
    `top_level_known`: whether the window's top is the file's, asked only for a node
    outside every function (it costs a scan of the prefix above the window); `middle_end`:
    where the middle ends when [lo, hi) is not the middle (a `try` being typed ends there)."""
    rules = RULES.get(language)
    if rules is None or hi <= lo:
        return []
    middle_end = hi if middle_end is None else middle_end
    hi = _judged_end(language, ts_language, root, lo, hi)
    found = []
    for node in _captured(_query(language, ts_language, rules.checked), root, lo, hi):
        if node.type == "try_statement":
            error = _handlerless_try(node, middle_end)
        else:
            error = _judge(language, rules, node, kind, top_level_known)
        if error is not None and not (root.has_error and _in_error(node)):  # asked last: it walks the ancestors
            found.append(error)
    return sorted(found, key=lambda e: (e.start, e.end))


HANDLERS = ("catch_clause", "finally_clause", "except_clause", "except_group_clause")


def _handlerless_try(node: ts.Node, middle_end: int) -> Optional[EarlyError]:
    """A `try` with neither `catch`/`except` nor `finally`. The grammars accept one; both
    compilers refuse it. Excusable (`EarlyError.excusable`) only while being typed: the
    middle is the last thing in its block, and a braced block is still open after it
    (`try {` + the cursor + `}`). One whose block goes on below the middle had its
    handler's line deleted (the hole), and one the middle closes (`} {`) is finished."""
    if any(child.type in HANDLERS for child in node.children):
        return None
    body = node.child_by_field_name("body")
    typed = (body is not None and not any(child.start_byte >= middle_end for child in body.named_children)
             and (body.type != "statement_block" or body.end_byte > middle_end))
    return EarlyError(node.start_byte, node.end_byte, "try without a handler", excusable=typed)


def _in_error(node: ts.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.is_error:
            return True
        parent = parent.parent
    return False


def _ancestors(node: ts.Node) -> Iterator[ts.Node]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def _enclosing(rules: Rules, node: ts.Node, wanted: frozenset[str]) -> Optional[ts.Node]:
    """The nearest ancestor of a wanted type below the nearest barrier (or the barrier
    itself, when it is wanted); None when the walk reaches a barrier or the root first."""
    child = node
    for parent in _ancestors(node):
        if parent.type in wanted and not _in_loop_else(parent, child):
            return parent
        if parent.type in rules.barriers:
            return None
        child = parent
    return None


def _in_loop_else(loop: ts.Node, child: ts.Node) -> bool:
    """Python's `for ... else:`: a `break` in the `else` clause belongs to an outer loop."""
    return child.type == "else_clause" and loop.type in PY_LOOPS


def _has_child(node: ts.Node, kind: str) -> bool:
    return any(child.type == kind for child in node.children)


def _function(rules: Rules, node: ts.Node) -> Optional[ts.Node]:
    """The function `node` belongs to; None at the top of the file (or of a class body)."""
    return _enclosing(rules, node, rules.functions)


# A verdict: no error, a message about the judged node, or a message and the node to
# blame inside it (the repeated keyword of an argument list, not the whole list).
Verdict = Union[None, str, tuple[str, ts.Node]]


def _judge(language: str, rules: Rules, node: ts.Node, kind: str, top_level_known: Callable[[], bool]) -> Optional[EarlyError]:
    if language == "python":
        verdict = _judge_python(rules, node, kind, top_level_known)
    else:
        verdict = _judge_javascript(rules, node, kind, top_level_known)
    if verdict is None:
        return None
    message, at = verdict if isinstance(verdict, tuple) else (verdict, node)
    return EarlyError(at.start_byte, at.end_byte, message)


def _at_top(node: ts.Node, rules: Rules) -> bool:
    """No barrier (function, class) between `node` and the root."""
    return not any(parent.type in rules.barriers for parent in _ancestors(node))


def _judge_javascript(rules: Rules, node: ts.Node, kind: str, top_level_known: Callable[[], bool]) -> Verdict:
    t = node.type

    def unsure_top() -> bool:
        # Outside every function, the window's top may be inside one the window does not
        # show; asked only before refusing (the answer costs a scan of the prefix).
        return _at_top(node, rules) and not top_level_known()

    if t == "return_statement":
        if _function(rules, node) is None and kind != COMMONJS and not unsure_top():
            return "return outside a function"
    elif t in ("break_statement", "continue_statement"):
        error = _jump_error(rules, node)
        return None if error is None or unsure_top() else error
    elif t == "yield_expression":
        function = _function(rules, node)
        if (function is None or not _is_generator(function)) and not unsure_top():
            return "yield outside a generator"
    elif t == "await_expression":
        function = _function(rules, node)
        if function is None:
            if kind == COMMONJS and not unsure_top():
                return "await at the top of a CommonJS file"
        elif not _has_child(function, "async"):
            return "await outside an async function"
    elif t in ("import_statement", "export_statement"):
        return _module_statement_error(node, kind, unsure_top)
    elif t in DECLARATIONS:
        return _declaration_error(node, kind, unsure_top)
    elif t in ("identifier", "shorthand_property_identifier", "shorthand_property_identifier_pattern"):
        if node.text in RESERVED:
            return "a reserved word as a name"
    elif t == "formal_parameters":
        return _bad_parameter(node) or _duplicate_parameter(node, kind) or _shadowed_parameter(node)
    elif t in ("binary_expression", "unary_expression"):
        # `a && b = c` parses as `a && (b = c)`, `a + (e) => f` as `a + ((e) => f)`;
        # JavaScript has no such precedence.
        for operand in node.named_children:
            if operand.type in ("assignment_expression", "augmented_assignment_expression", "arrow_function"):
                return "an assignment or an arrow function as an operand", operand
    elif t == "method_definition":
        return _second_constructor(node)
    elif t == ",":
        return _empty_slot(node)
    elif t == "for_in_statement":
        return _declaration_as_body(node) or loop_head_redeclared(node, kind == MODULE)
    else:  # a statement with a single statement as its body: `if (x) let y = 1;`
        return _declaration_as_body(node)
    return None


# Words no name may be (`case(`, `{ A, var }`: the grammar takes them for identifiers); and
# `let`, reserved in strict code (modules, classes, 'use strict' files) and hardly ever a
# name elsewhere.
RESERVED = frozenset(w.encode() for w in """break case catch class const continue debugger default delete do else enum
    export extends false finally for function if import in instanceof new null return super switch this throw true try
    typeof var void while with let""".split())


def _not_a_binding(node: ts.Node) -> Verdict:
    """A declaration's pattern with something other than a name where a name is bound:
    `const { colors: this.colors } = o` ("Illegal property in declaration context")."""
    for declarator in node.named_children:
        name = declarator.child_by_field_name("name") if declarator.type == "variable_declarator" else None
        bad = _non_binding(name) if name is not None and name.type in ("object_pattern", "array_pattern") else None
        if bad is not None:
            return "a property where a declaration binds a name", bad
    return None


def _non_binding(pattern: ts.Node) -> Optional[ts.Node]:
    for child in pattern.named_children:
        target = child
        if child.type == "pair_pattern":
            target = child.child_by_field_name("value")
        elif child.type in ("assignment_pattern", "object_assignment_pattern"):
            target = child.child_by_field_name("left")
        elif child.type == "rest_pattern":
            target = child.named_children[0] if child.named_children else None
        while target is not None and target.type == "assignment_pattern":  # `log: { ... } = {}`
            target = target.child_by_field_name("left")
        if target is None or target.type in ("identifier", "shorthand_property_identifier_pattern", "comment"):
            continue
        if target.type in ("object_pattern", "array_pattern"):
            inner = _non_binding(target)
            if inner is not None:
                return inner
        else:
            return target
    return None


def _module_statement_error(node: ts.Node, kind: str, unsure_top: Callable[[], bool]) -> Verdict:
    """`import`/`export` in a CommonJS file; an import's name declared again; a name
    exported twice (exports stand at a module's top only, so the window cannot mislead)."""
    if node.parent is None or node.parent.type != "program":
        return None
    if kind == COMMONJS:
        return f"{node.type.split('_')[0]} in a CommonJS file"
    if node.type == "export_statement":
        return exported_twice(node)
    twice = redeclared(node, kind == MODULE, lambda: True)
    return None if twice is None or unsure_top() else twice


def _declaration_error(node: ts.Node, kind: str, unsure_top: Callable[[], bool]) -> Verdict:
    """A declaration's early errors: `const x;`, a property as a binding, a name its scope
    has already (grammars/js_declarations.py; outside every function only where the
    window's top is the file's: a window cut inside a block shows its statements as the
    program's)."""
    if node.type in LEXICAL:
        found: Verdict = _uninitialized(node) or _not_a_binding(node)
    else:
        found = _not_a_binding(node) if node.type == "variable_declaration" else None
    if found is not None:
        return found
    twice = redeclared(node, kind == MODULE, lambda: _strict(node, kind))
    return None if twice is None or unsure_top() else twice


SINGLE_BODY = ("if_statement", "else_clause", "for_statement", "for_in_statement", "while_statement", "do_statement", "labeled_statement")


def _declaration_as_body(node: ts.Node) -> Optional[str]:
    """`let`/`const`/`class` as the body of an `if`, a loop or a label: "Lexical
    declaration cannot appear in a single-statement context" (a deleted `{` line leaves
    one: `if (x)` + newline + `let y = 1`)."""
    if node.type == "else_clause":
        body = node.named_children[0] if node.named_children else None
    else:
        body = node.child_by_field_name("consequence" if node.type == "if_statement" else "body")
    return "a declaration as the body of a statement" if body is not None and body.type in LEXICAL else None


# Lists whose slots must not be empty (an array's may: `[, a]`); the grammar lets
# `f(, a)` and `{ , a: 1 }` through.
COMMA_LISTS = ("arguments", "object", "object_pattern", "formal_parameters", "named_imports", "export_clause", "class_heritage")


def _empty_slot(comma: ts.Node) -> Optional[str]:
    parent = comma.parent
    previous = comma.prev_sibling
    if parent is None or parent.type not in COMMA_LISTS or previous is None:
        return None
    return "an empty slot in a list" if previous.type in ("(", "{", ",") else None


def _uninitialized(node: ts.Node) -> Optional[str]:
    """`const x;` or `let {a};` outside a `for (... of/in ...)` head: "Missing initializer"."""
    if node.type != "lexical_declaration":
        return None
    is_const = node.children[0].type == "const" if node.children else False
    for declarator in node.named_children:
        if declarator.type != "variable_declarator" or declarator.child_by_field_name("value") is not None:
            continue
        name = declarator.child_by_field_name("name")
        if is_const or (name is not None and name.type != "identifier"):
            return "a declaration without its initializer"
    return None


def _is_generator(function: ts.Node) -> bool:
    return function.type.startswith("generator_function") or (function.type == "method_definition" and _has_child(function, "*"))


def _jump_error(rules: Rules, node: ts.Node) -> Optional[str]:
    """`break`/`continue` with or without a label, JavaScript's rules."""
    word = "break" if node.type == "break_statement" else "continue"
    label = node.child_by_field_name("label")
    if label is not None:
        target = _labelled(rules, node, label.text or b"")
        if target is None:
            return f"{word} to an unknown label"
        body = target.child_by_field_name("body")
        if word == "continue" and (body is None or body.type not in rules.loops):
            return "continue to a label that is not a loop"
        return None
    if _enclosing(rules, node, rules.breakable if word == "break" else rules.loops) is None:
        return f"{word} outside a loop"
    return None


def _labelled(rules: Rules, node: ts.Node, label: bytes) -> Optional[ts.Node]:
    for parent in _ancestors(node):
        if parent.type == "labeled_statement":
            name = parent.child_by_field_name("label")
            if name is not None and name.text == label:
                return parent
        if parent.type in rules.barriers:
            return None
    return None




PARAMETER_TYPES = ("identifier", "object_pattern", "array_pattern", "assignment_pattern", "rest_pattern", "comment")


def _bad_parameter(parameters: ts.Node) -> Verdict:
    """A parameter that is no binding (`if (this.value) {` in a class body parses as a
    method `if` with the parameter `this.value`)."""
    for parameter in parameters.named_children:
        if parameter.type not in PARAMETER_TYPES:
            return "a parameter that is not a name", parameter
    return None


def _second_constructor(method: ts.Node) -> Optional[str]:
    """`constructor(...) {` where the class already has one."""
    name = method.child_by_field_name("name")
    body = method.parent
    if name is None or name.text != b"constructor" or body is None or _is_special(method):
        return None
    for sibling in body.named_children:
        other = sibling.child_by_field_name("name") if sibling.type == "method_definition" else None
        if sibling.id != method.id and other is not None and other.text == b"constructor" and not _is_special(sibling):
            return "a second constructor"
    return None


def _is_special(method: ts.Node) -> bool:
    """A static, getter, setter or generator method: `constructor` is then an ordinary name
    (or refused in other words)."""
    return any(child.type in ("static", "get", "set", "*", "async") for child in method.children)


def _duplicate_parameter(parameters: ts.Node, kind: str) -> Verdict:
    """A parameter named twice where the language forbids it: in strict code, an arrow
    function, a method, or a list with defaults, patterns or a rest parameter (a plain
    `function f(a, a)` in sloppy code is legal)."""
    seen: set[bytes] = set()
    twice = None
    for parameter in parameters.named_children:
        for name in pattern_names(parameter):
            if name in seen and twice is None:
                twice = parameter
            seen.add(name)
    if twice is None:
        return None
    function = parameters.parent
    simple = all(p.type in ("identifier", "comment") for p in parameters.named_children)
    if not simple or function is None or function.type in ("arrow_function", "method_definition") or _strict(function, kind):
        return "a parameter named twice", twice
    return None


def _strict(node: ts.Node, kind: str) -> bool:
    """Whether `node` is strict code: an ES module, a class, or under a `'use strict'`
    directive (the first statements of the file or of an enclosing function)."""
    if kind == MODULE:
        return True
    for scope in (node, *_ancestors(node)):
        if scope.type == "class_body":
            return True
        body = scope.child_by_field_name("body") if scope.type in JS_FUNCTIONS else scope if scope.type == "program" else None
        if body is not None and _has_use_strict(body):
            return True
    return False


def _has_use_strict(body: ts.Node) -> bool:
    for statement in body.named_children:
        if statement.type == "comment":
            continue
        if statement.type != "expression_statement" or not statement.named_children or statement.named_children[0].type != "string":
            return False
        if (statement.named_children[0].text or b"")[1:-1] == b"use strict":
            return True
    return False


def _shadowed_parameter(parameters: ts.Node) -> Optional[str]:
    """A parameter list (the middle's) naming what the function's body declares with
    `let`/`const`/`class`: `error(message) {` above `const message = ...`."""
    function = parameters.parent
    body = function.child_by_field_name("body") if function is not None else None
    if function is None or function.type not in JS_FUNCTIONS or body is None or body.type != "statement_block":
        return None
    names = {name for p in parameters.named_children for name in pattern_names(p)}
    lexical = {name for child in body.named_children if child.type in LEXICAL for name in declared(child)}
    clash = names & lexical
    return f"{sorted(clash)[0].decode(errors='replace')} declared twice in one block" if clash else None


def _judge_python(rules: Rules, node: ts.Node, kind: str, top_level_known: Callable[[], bool]) -> Verdict:
    t = node.type

    def unsure_top() -> bool:
        # The window's top may be inside a function the window does not show; asked only
        # before refusing (the answer costs a scan of the prefix).
        return _at_top(node, rules) and not top_level_known()

    if node.parent is not None and node.parent.type == "module" and _before_future_import(node):
        return "a statement before a `from __future__` import"
    if t in ("return_statement", "yield", "nonlocal_statement"):
        function = _function(rules, node)
        if function is None:
            return None if unsure_top() else f"{t.split('_')[0]} outside a function"
        if t == "return_statement" and function.type == "lambda":
            return None  # not a statement there; the grammar cannot put one in a lambda anyway
    elif t in ("break_statement", "continue_statement"):
        if _enclosing(rules, node, rules.loops) is None and not unsure_top():
            return f"{t.split('_')[0]} outside a loop"
    elif t == "await":
        function = _function(rules, node)
        if function is None:
            return None if unsure_top() else "await outside an async function"
        if function.type == "lambda" or not _has_child(function, "async"):
            return "await outside an async function"
    elif t == "argument_list":
        return _python_arguments(node)
    elif t in ("parameters", "lambda_parameters"):
        seen: set[bytes] = set()
        for parameter in node.named_children:
            for name in _python_parameter(parameter):
                if name in seen:
                    return "a parameter named twice", parameter
                seen.add(name)
    return None


def _before_future_import(node: ts.Node) -> bool:
    """A module-level statement, not the docstring nor a `from __future__` import itself,
    with such an import after it: those must come first (`import typing` written above
    `from __future__ import annotations`)."""
    if node.type in ("future_import_statement", "comment") or _is_docstring(node):
        return False
    later = node.next_named_sibling
    while later is not None:
        if later.type == "future_import_statement":
            return True
        later = later.next_named_sibling
    return False


def _is_docstring(node: ts.Node) -> bool:
    first = node.prev_named_sibling
    while first is not None and first.type == "comment":
        first = first.prev_named_sibling
    return first is None and node.type == "expression_statement" and node.named_child_count == 1 and node.named_children[0].type == "string"


def _python_arguments(node: ts.Node) -> Verdict:
    """`f(a=1, a=2)` ("keyword argument repeated"), `f(a=1, b)` ("positional argument
    follows keyword argument"), `f(**k, *a)`; blamed on the argument at fault, so that a
    hole inside a long call is judged by what the middle put there."""
    keywords: set[bytes] = set()
    keyword_seen = mapping_seen = False
    for child in node.named_children:
        if child.type == "comment":
            continue
        if child.type == "keyword_argument":
            name = child.child_by_field_name("name")
            if name is not None and name.text in keywords:
                return "a keyword argument repeated", child
            keywords.add(name.text if name is not None and name.text else b"")
            keyword_seen = True
        elif child.type == "dictionary_splat":
            mapping_seen = True
        elif mapping_seen or (keyword_seen and child.type != "list_splat"):
            return "a positional argument after a keyword argument", child
    return None


def _python_parameter(node: ts.Node) -> list[bytes]:
    if node.type == "identifier":
        return [node.text] if node.text else []
    if node.type in ("default_parameter", "typed_default_parameter"):
        name = node.child_by_field_name("name")
        return [name.text] if name is not None and name.text else []
    if node.type in ("typed_parameter", "list_splat_pattern", "dictionary_splat_pattern"):
        return [c.text for c in node.named_children[:1] if c.type == "identifier" and c.text]
    return []
