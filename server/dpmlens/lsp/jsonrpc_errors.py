"""Malformed JSON-RPC messages, answered as the JSON-RPC 2.0 spec requires (section 5.1).

pygls 2.1.1 drops a message it cannot structure without answering, so the client waits for
ever. The protocol (server.py) turns each such message into a `BadMessage` here and answers
it: ParseError (-32700) for a body that is no JSON, InvalidRequest (-32600) for a value that is
no request (wrong `jsonrpc`, `method` not a string, a bad `id`), InvalidParams (-32602) for
params of the wrong shape. Notifications get no answer (the spec forbids one), only a log line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


@dataclass
class BadMessage:
    data: Any  # the decoded JSON value (a dict, or anything else)
    code: int
    reason: str

    @property
    def id(self) -> int | str | None:
        """The request id if it can be read, else None (answered with "id": null)."""
        if isinstance(self.data, dict):
            mid = self.data.get("id")
            if _valid_id(mid):
                return mid
        return None

    @property
    def is_notification(self) -> bool:
        return (isinstance(self.data, dict) and "id" not in self.data
                and isinstance(self.data.get("method"), str))

    @property
    def is_response(self) -> bool:
        return isinstance(self.data, dict) and "method" not in self.data and (
            "result" in self.data or "error" in self.data)

    def answer(self) -> dict[str, Any] | None:
        """The error response to send, or None (notifications and responses get none)."""
        if self.is_response or (self.is_notification and self.code == INVALID_PARAMS):
            return None
        return {"jsonrpc": "2.0", "id": self.id,
                "error": {"code": self.code, "message": self.reason}}


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def envelope_problem(data: Any) -> tuple[int, str] | None:
    """(code, one-line reason) if `data` is no JSON-RPC 2.0 message, else None."""
    if not isinstance(data, dict):
        return INVALID_REQUEST, f"Invalid Request: not a JSON object: {short(data)}"
    if data.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, f'Invalid Request: "jsonrpc" must be "2.0", got ' \
                                f"{short(data.get('jsonrpc'))}"
    if "id" in data and data["id"] is not None and not _valid_id(data["id"]):
        return INVALID_REQUEST, f'Invalid Request: "id" must be a number or a string, got ' \
                                f"{short(data['id'])}"
    if "method" in data:
        if not isinstance(data["method"], str):
            return INVALID_REQUEST, f'Invalid Request: "method" must be a string, got ' \
                                    f"{short(data['method'])}"
        params = data.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return INVALID_PARAMS, f'Invalid Params: "params" of {data["method"]} must be an ' \
                                   f"object or an array, got {short(params)}"
    elif "result" not in data and "error" not in data:
        return INVALID_REQUEST, 'Invalid Request: no "method" (nor "result"/"error")'
    return None


def params_problem(method: Any, exc: BaseException) -> str:
    """One line for params that do not fit the method's type (a cattrs structuring error)."""
    cause = exc.__cause__ or exc
    try:
        from cattrs import transform_error

        details = transform_error(cause)  # ["required field missing @ $.text_document", ...]
    except Exception:  # noqa: BLE001 - not a cattrs error: its own text
        details = [str(cause)]
    shown = "; ".join(details[:3]) + (f" (+{len(details) - 3} more)" if len(details) > 3 else "")
    return f"Invalid Params for {method}: {shown}"
