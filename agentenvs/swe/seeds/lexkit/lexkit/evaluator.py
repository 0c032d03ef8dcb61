"""Shunting-yard conversion to reverse Polish notation, and RPN evaluation."""

from .tokenizer import tokenize
from .tokens import EOF, IDENT, KEYWORD, NUMBER, OP, STRING

PRECEDENCE = {
    "or": 1,
    "and": 2,
    "not": 3,
    "==": 4,
    "!=": 4,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
    "neg": 7,
    "**": 8,
}
RIGHT_ASSOC = frozenset({"**"})
BINARY = frozenset(PRECEDENCE) - {"not", "neg"}
FUNCTIONS = {"abs": (1, abs), "min": (2, min), "max": (2, max)}


class EvalError(ValueError):
    """Raised for expressions that cannot be parsed or evaluated."""


def _is_unary_position(prev):
    """True if an operator following ``prev`` must be a prefix operator."""
    if prev is None or prev.kind == KEYWORD and prev.value in ("and", "or", "not"):
        return True
    return prev.kind == OP and prev.value != ")"


def _pop_until_paren(stack, output, token):
    for _ in range(len(stack)):
        if stack[-1][0] == "(":
            return
        output.append(stack.pop())
    raise EvalError(f"unbalanced parentheses at {token.line}:{token.column}")


def _push_binary(stack, output, op):
    prec = PRECEDENCE[op]
    for _ in range(len(stack)):
        kind, top = stack[-1]
        if kind != "op":
            break
        top_prec = PRECEDENCE[top]
        if top_prec > prec or (top_prec == prec and op not in RIGHT_ASSOC):
            output.append(stack.pop())
        else:
            break
    stack.append(("op", op))


def to_rpn(tokens):
    """Convert tokens to a list of RPN items ``(kind, value)`` with the shunting-yard algorithm."""
    output = []
    stack = []
    prev = None
    for index, token in enumerate(tokens):
        kind, value = token.kind, token.value
        if kind == EOF:
            break
        if kind in (NUMBER, STRING):
            output.append(("num", value))
        elif kind == KEYWORD and value in ("true", "false"):
            output.append(("num", value == "true"))
        elif kind == IDENT:
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            if value in FUNCTIONS and following is not None and following.value == "(":
                stack.append(("call", value))
            else:
                output.append(("var", value))
        elif value == "(":
            stack.append(("(", None))
        elif value == ",":
            _pop_until_paren(stack, output, token)
        elif value == ")":
            _pop_until_paren(stack, output, token)
            stack.pop()
            if stack and stack[-1][0] == "call":
                output.append(stack.pop())
        elif value == "not" or value == "-" and _is_unary_position(prev):
            stack.append(("op", "neg" if value == "-" else "not"))
        elif value in BINARY:
            _push_binary(stack, output, value)
        else:
            raise EvalError(f"unexpected token {value!r} at {token.line}:{token.column}")
        prev = token
    for _ in range(len(stack)):
        item = stack.pop()
        if item[0] == "(":
            raise EvalError("unbalanced parentheses")
        output.append(item)
    return output


def format_rpn(rpn):
    """Space-separated text form of an RPN list, e.g. ``"1 2 3 * +"``."""
    return " ".join(str(value) for _, value in rpn)


def _pop_args(stack, count):
    if len(stack) < count:
        raise EvalError("missing operand")
    args = stack[len(stack) - count :]
    del stack[len(stack) - count :]
    return args


def apply_binary(op, left, right):
    """Apply binary operator ``op``; division by zero raises EvalError."""
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op in ("/", "%") and right == 0:
        raise EvalError("division by zero")
    if op == "/":
        return left / right
    if op == "%":
        return left % right
    if op == "**":
        return left**right
    if op == "==":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    if op == ">=":
        return left >= right
    if op == "and":
        return left and right
    if op == "or":
        return left or right
    raise EvalError(f"unknown operator {op!r}")


def evaluate_rpn(rpn, variables=None):
    """Evaluate an RPN list; names are looked up in ``variables``."""
    env = {} if variables is None else variables
    stack = []
    for kind, value in rpn:
        if kind == "num":
            stack.append(value)
        elif kind == "var":
            if value not in env:
                raise EvalError(f"unknown variable {value!r}")
            stack.append(env[value])
        elif kind == "call":
            arity, func = FUNCTIONS[value]
            stack.append(func(*_pop_args(stack, arity)))
        elif value in ("neg", "not"):
            (operand,) = _pop_args(stack, 1)
            stack.append(-operand if value == "neg" else not operand)
        else:
            left, right = _pop_args(stack, 2)
            stack.append(apply_binary(value, left, right))
    if len(stack) != 1:
        raise EvalError(f"malformed expression ({len(stack)} values left)")
    return stack[0]


def evaluate(source, variables=None):
    """Tokenize, convert and evaluate ``source``."""
    return evaluate_rpn(to_rpn(tokenize(source)), variables)
