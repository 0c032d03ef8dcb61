"""lexkit: a tokenizer and shunting-yard evaluator for a small expression language."""

from .evaluator import EvalError, apply_binary, evaluate, evaluate_rpn, format_rpn, to_rpn
from .tokenizer import match_operator, read_number, read_string, token_values, tokenize
from .tokens import LexError, Token

__all__ = [
    "EvalError",
    "LexError",
    "Token",
    "apply_binary",
    "evaluate",
    "evaluate_rpn",
    "format_rpn",
    "match_operator",
    "read_number",
    "read_string",
    "to_rpn",
    "token_values",
    "tokenize",
]
