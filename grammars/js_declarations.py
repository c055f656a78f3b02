"""JavaScript's declaration early errors: a name declared twice in one scope, an export twice.

tree-sitter's grammar parses `const a = 1; const a = 2;` and Node refuses it before running
anything (`SyntaxError: Identifier 'a' has already been declared`). The rules, as the
language states them (ECMA-262's early errors for blocks, function bodies, scripts,
modules, `switch`, `for` and `catch`):

* a scope's *lexical* names (`let`, `const`, `class`; `import` at the top of a module;
  `function` in a block, a `switch`, or at the top of a module) are each declared once,
  but for two functions in a block of sloppy code (Annex B);
* none of them is also a *var* name of that scope: a `var` anywhere inside it (blocks
  included, functions not), and at the top of a function or a script a `function`;
* none of them names a parameter of the function whose body the scope is, or the `catch`
  parameter of a `catch` block;
* a `for (let i ...)` head's names are no `var` of its body;
* a module exports each name once (`export var X;` and `export { X }` both export `X`;
  `export default` exports `default`).

Each rule is asked of the declaration the middle wrote, in both directions: a `let` finds a
`var` nested below it, and a `var` finds a `let` in any block it hoists through. Only the
text the tree holds is seen (the window around the cursor, grammars/window.py): a name
declared beyond it is not.
"""
from __future__ import annotations

from typing import Callable, Iterator, Optional

import tree_sitter as ts

FUNCTIONS = frozenset({"function_declaration", "function_expression", "function", "arrow_function", "method_definition",
                       "generator_function", "generator_function_declaration"})
FUNCTION_DECLARATIONS = ("function_declaration", "generator_function_declaration")
# Where a `var` stops hoisting: a function, a class's static block (a function of its own),
# a class body (its members are functions and fields, never a `var`).
VAR_BOUNDARIES = FUNCTIONS | {"class_static_block", "class_body"}
LEXICAL_SCOPES = ("program", "statement_block", "switch_body")
FOR_STATEMENTS = ("for_statement", "for_in_statement")
# The nodes a bound name passes through up to its declaration, each with the field that
# holds the binding side (a default's value, `{a = b}`'s `b`, is no binding).
PATTERN_SIDES = {"object_pattern": None, "array_pattern": None, "rest_pattern": None, "pair_pattern": "value",
                 "assignment_pattern": "left", "object_assignment_pattern": "left"}


def pattern_names(node: ts.Node) -> list[bytes]:
    """The names a binding (`x`, `{a, b: [c], ...d}`, `x = 1`) declares."""
    if node.type in ("identifier", "shorthand_property_identifier_pattern"):
        return [node.text] if node.text else []
    if node.type == "pair_pattern":
        value = node.child_by_field_name("value")
        return pattern_names(value) if value is not None else []
    if node.type in ("assignment_pattern", "object_assignment_pattern"):
        left = node.child_by_field_name("left")
        return pattern_names(left) if left is not None else []
    if node.type in ("object_pattern", "array_pattern", "rest_pattern"):
        return [name for child in node.named_children for name in pattern_names(child)]
    return []


def declared(node: ts.Node) -> list[bytes]:
    """The names a declaration statement declares, each as often as it declares it (an
    `import` its local names)."""
    if node.type in ("lexical_declaration", "variable_declaration"):
        names = []
        for declarator in node.named_children:
            name = declarator.child_by_field_name("name") if declarator.type == "variable_declarator" else None
            if name is not None:
                names.extend(pattern_names(name))
        return names
    if node.type == "import_statement":
        return _imported(node)
    name = node.child_by_field_name("name")
    return [name.text] if name is not None and name.text else []


def _imported(node: ts.Node) -> list[bytes]:
    """`import d, { a, b as c } from 'm'`, `import * as ns from 'm'`: d, a, c, ns."""
    names: list[bytes] = []
    for clause in (c for c in node.named_children if c.type == "import_clause"):
        for part in clause.named_children:
            if part.type == "identifier" and part.text:
                names.append(part.text)
            elif part.type == "namespace_import":
                names.extend(c.text for c in part.named_children if c.type == "identifier" and c.text)
            elif part.type == "named_imports":
                for spec in (s for s in part.named_children if s.type == "import_specifier"):
                    local = spec.child_by_field_name("alias") or spec.child_by_field_name("name")
                    if local is not None and local.type == "identifier" and local.text:
                        names.append(local.text)
    return names


def parameters(function: ts.Node) -> list[bytes]:
    """The names a function's parameters bind."""
    params = function.child_by_field_name("parameters")
    if params is None:
        param = function.child_by_field_name("parameter")  # `x => ...`
        return pattern_names(param) if param is not None else []
    return [name for p in params.named_children for name in pattern_names(p)]


def _unwrapped(statement: ts.Node) -> ts.Node:
    """The declaration an `export` statement holds (`export const a = 1`), else itself."""
    if statement.type == "export_statement":
        declaration = statement.child_by_field_name("declaration")
        if declaration is not None:
            return declaration
    return statement


def _items(scope: ts.Node) -> Iterator[ts.Node]:
    """The statements directly in a scope, those of a `switch`'s cases included (one scope
    for all its cases), with exported declarations unwrapped."""
    for child in scope.named_children:
        if child.type in ("switch_case", "switch_default"):
            yield from (_unwrapped(c) for c in child.children_by_field_name("body"))
        else:
            yield _unwrapped(child)


def _var_top(scope: ts.Node, module: bool) -> bool:
    """Whether a `function` declared directly in `scope` is a var, not a lexical name: at
    the top of a function's body, of a class's static block, or of a script (not of a
    module, not in a block)."""
    if scope.type == "program":
        return not module
    parent = scope.parent
    return scope.type == "statement_block" and parent is not None and (parent.type in FUNCTIONS or parent.type == "class_static_block")


def _is_lexical(statement: ts.Node, scope: ts.Node, module: bool) -> bool:
    if statement.type in ("lexical_declaration", "class_declaration", "import_statement"):
        return True
    return statement.type in FUNCTION_DECLARATIONS and not _var_top(scope, module)


def _lexical(scope: ts.Node, module: bool, but: Optional[ts.Node] = None) -> list[tuple[bytes, ts.Node]]:
    """The lexical names declared directly in `scope`, with the statement declaring each,
    leaving out statement `but`."""
    return [(name, item) for item in _items(scope) if (but is None or item.id != but.id) and _is_lexical(item, scope, module)
            for name in declared(item)]


def _var_names(scope: ts.Node, module: bool, names: set[bytes]) -> set[bytes]:
    """Those of `names` that are var names of a scope: declared by a `var` inside it that
    hoists up to it (through blocks, not functions), or at a function's or a script's top
    by a `function`. Found by the names' places in the scope's text, each looked up in the
    tree (a walk of every `var` of a 200 kB window cost 0.4 ms a check)."""
    found: set[bytes] = set()
    if scope.type in LEXICAL_SCOPES and _var_top(scope, module):
        found.update(n for item in _items(scope) if item.type in FUNCTION_DECLARATIONS for n in declared(item) if n in names)
    text, start = scope.text or b"", scope.start_byte
    for name in names - found:
        at = text.find(name)
        while at >= 0:
            node = scope.descendant_for_byte_range(start + at, start + at + len(name))
            declaration = _binding_declaration(node) if node is not None and node.text == name else None
            if declaration is not None and _hoists_to(declaration, scope):
                found.add(name)
                break
            at = text.find(name, at + 1)
    return found


def _binding_declaration(name: ts.Node) -> Optional[ts.Node]:
    """The `var` statement, or `for (var ... in/of ...)` loop, that `name` (an identifier)
    is a bound name of; None for any other place (a use, a `let`, a default's value)."""
    if name.type not in ("identifier", "shorthand_property_identifier_pattern"):
        return None
    child, parent = name, name.parent
    while parent is not None and parent.type in PATTERN_SIDES:
        side = PATTERN_SIDES[parent.type]
        if side is not None and (parent.child_by_field_name(side) or parent).id != child.id:
            return None
        child, parent = parent, parent.parent
    if parent is None:
        return None
    if parent.type == "variable_declarator" and (parent.child_by_field_name("name") or parent).id == child.id:
        declaration = parent.parent
        return declaration if declaration is not None and declaration.type == "variable_declaration" else None
    if parent.type == "for_in_statement" and (parent.child_by_field_name("left") or parent).id == child.id:
        kind = parent.child_by_field_name("kind")
        return parent if kind is not None and kind.type == "var" else None
    return None


def _hoists_to(node: ts.Node, scope: ts.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.id == scope.id:
            return True
        if parent.type in VAR_BOUNDARIES:
            return False
        parent = parent.parent
    return False


def _scope(statement: ts.Node) -> Optional[ts.Node]:
    """The scope a declaration statement declares in: its block, the `switch` its case is
    in, the program (through an `export`), or a `for` whose head it is."""
    parent = statement.parent
    if parent is not None and parent.type == "export_statement":
        parent = parent.parent
    if parent is not None and parent.type in ("switch_case", "switch_default"):
        parent = parent.parent
    if parent is None or parent.type not in LEXICAL_SCOPES + FOR_STATEMENTS:
        return None
    return parent


def _bound_outside(scope: ts.Node) -> list[bytes]:
    """Names a block's lexical declarations may not take: the parameters of the function
    whose body it is, the `catch` parameter of a `catch` block."""
    owner = scope.parent
    if scope.type != "statement_block" or owner is None:
        return []
    if owner.type in FUNCTIONS:
        return parameters(owner)
    param = owner.child_by_field_name("parameter") if owner.type == "catch_clause" else None
    return pattern_names(param) if param is not None else []


def _first(names: set[bytes]) -> Optional[str]:
    """The message for the first name declared twice; None for none."""
    return f"{sorted(names)[0].decode(errors='replace')} declared twice in one scope" if names else None


def redeclared(statement: ts.Node, module: bool, strict: Callable[[], bool]) -> Optional[str]:
    """Whether a declaration statement (`let`/`const`/`class`/`var`/`function`/`import`)
    declares a name its scope has already (the rules above); the message, else None.
    `module`: whether the file is an ES module; `strict`: whether the statement is strict
    code (asked only for two functions in a block)."""
    if statement.type == "variable_declaration":
        return _var_clash(statement, set(declared(statement)), module)
    scope = _scope(statement)
    if scope is None:
        return None
    if scope.type in FOR_STATEMENTS:  # a `for (let i ...)` head
        return _for_head_clash(statement, scope, module)
    if not _is_lexical(statement, scope, module):  # a function at a function's or a script's top: a var
        return _first(set(declared(statement)) & {n for n, _ in _lexical(scope, module)})
    return _lexical_clash(statement, scope, module, strict)


def _lexical_clash(statement: ts.Node, scope: ts.Node, module: bool, strict: Callable[[], bool]) -> Optional[str]:
    names = declared(statement)
    twice = {n for n in names if names.count(n) > 1}
    is_function = statement.type in FUNCTION_DECLARATIONS
    for name, other in _lexical(scope, module, but=statement):
        # Two functions in a block of sloppy code are allowed (Annex B); at a module's top never.
        annex_b = is_function and other.type in FUNCTION_DECLARATIONS and scope.type != "program" and not strict()
        if name in names and not annex_b:
            twice.add(name)
    twice |= set(names) & set(_bound_outside(scope)) | _var_names(scope, module, set(names))
    return _first(twice)


def _head_names(loop: ts.Node) -> list[bytes]:
    """The names a `for` head declares with `let`/`const` (`for (let i = 0;;)`, `for (const k of o)`)."""
    head = loop.child_by_field_name("initializer")
    if head is not None:
        return declared(head) if head.type == "lexical_declaration" else []
    kind = loop.child_by_field_name("kind")
    left = loop.child_by_field_name("left")
    return pattern_names(left) if kind is not None and kind.type in ("let", "const") and left is not None else []


def _for_head_clash(statement: ts.Node, loop: ts.Node, module: bool) -> Optional[str]:
    """`for (let i ...)`: a name twice in the head, or a `var` of the body."""
    names = declared(statement)
    twice = {n for n in names if names.count(n) > 1}
    body = loop.child_by_field_name("body")
    if body is not None and statement.type == "lexical_declaration":
        twice |= _var_names(body, module, set(names))
        if body.type == "variable_declaration":  # `for (let i;;) var i;`
            twice |= set(names) & set(declared(body))
    return _first(twice)


def loop_head_redeclared(loop: ts.Node, module: bool) -> Optional[str]:
    """`for (let [a, a] of o)`, `for (const k of o) { var k; }`: a `for ... in/of` head's
    `let`/`const` names twice, or a `var` of its body; `for (var k in o)` beside a `let k`
    (a `for (;;)` head is a declaration statement, judged by `redeclared`)."""
    kind, left = loop.child_by_field_name("kind"), loop.child_by_field_name("left")
    if kind is not None and kind.type == "var" and left is not None:
        return _var_clash(loop, set(pattern_names(left)), module)
    names = _head_names(loop) if loop.child_by_field_name("initializer") is None else []
    body = loop.child_by_field_name("body")
    twice = {n for n in names if names.count(n) > 1}
    if names and body is not None:
        twice |= _var_names(body, module, set(names)) | (set(names) & set(declared(body) if body.type == "variable_declaration" else []))
    return _first(twice)


def _var_clash(statement: ts.Node, names: set[bytes], module: bool) -> Optional[str]:
    """A `var` statement (or a `for (var ...)` loop) declaring `names`, one of which is a
    lexical name of a scope it hoists through (or of a `for (let ...)` head around it), up
    to its function or the program."""
    child, parent = statement, statement.parent
    while parent is not None and names:
        if parent.type in LEXICAL_SCOPES:
            clash = names & {n for n, _ in _lexical(parent, module)}
        elif parent.type in FOR_STATEMENTS and child.id == (parent.child_by_field_name("body") or parent).id:
            clash = names & set(_head_names(parent))
        else:
            clash = set()
        if clash or parent.type in VAR_BOUNDARIES:
            return _first(clash)
        child, parent = parent, parent.parent
    return None


def exported(statement: ts.Node) -> list[bytes]:
    """The names an `export` statement exports: `default` for `export default ...`, an
    exported declaration's names, a clause's names as exported (`a as b`: b), `* as ns`."""
    if any(child.type == "default" for child in statement.children):
        return [b"default"]
    declaration = statement.child_by_field_name("declaration")
    if declaration is not None:
        return declared(declaration)
    names: list[bytes] = []
    for part in statement.named_children:
        if part.type == "namespace_export":
            names.extend(_name_text(c) for c in part.named_children)
        elif part.type == "export_clause":
            for spec in (s for s in part.named_children if s.type == "export_specifier"):
                name = spec.child_by_field_name("alias") or spec.child_by_field_name("name")
                if name is not None:
                    names.append(_name_text(name))
    return [n for n in names if n]


def _name_text(node: ts.Node) -> bytes:
    """An exported name as written: an identifier, `default`, or a string's content."""
    text = node.text or b""
    return text[1:-1] if node.type == "string" else text


def exported_twice(statement: ts.Node) -> Optional[str]:
    """An `export` statement exporting a name the module already exports (or twice itself):
    `Duplicate export of 'X'`."""
    program = statement.parent
    if program is None or program.type != "program":
        return None
    names = exported(statement)
    twice = {n for n in names if names.count(n) > 1}
    others = {n for s in program.named_children if s.type == "export_statement" and s.id != statement.id for n in exported(s)}
    twice |= set(names) & others
    return f"{sorted(twice)[0].decode(errors='replace')} exported twice" if twice else None
