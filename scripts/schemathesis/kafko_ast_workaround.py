"""Loaded at start-up in .venv-test (via kafko_ast_workaround.pth).

CPython 3.11.x before 3.11.8 can raise ``SystemError: AST constructor recursion depth
mismatch`` from ``ast.parse`` when it runs deep in the stack. Hypothesis calls it only
to *describe* a lambda for a strategy's repr, and schemathesis then reports a "Runtime
Error" for the whole operation. A description is cosmetic: fall back to a plain one.
"""

try:
    from hypothesis.internal import lambda_sources as _sources
except Exception:  # hypothesis absent or reorganised: nothing to patch
    _sources = None

if _sources is not None and hasattr(_sources, "lambda_description"):
    _original = _sources.lambda_description

    def lambda_description(f):
        try:
            return _original(f)
        except SystemError:
            return "lambda: <source unavailable>"

    _sources.lambda_description = lambda_description
