# Vendored by clients/python/tools/vendor_proto.py from generated/python. DO NOT EDIT.
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HistoryRequest(_message.Message):
    __slots__ = ("run_id", "state", "machine", "since_ms", "until_ms", "limit", "kind")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    UNTIL_MS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    state: str
    machine: str
    since_ms: int
    until_ms: int
    limit: int
    kind: str
    def __init__(self, run_id: _Optional[str] = ..., state: _Optional[str] = ..., machine: _Optional[str] = ..., since_ms: _Optional[int] = ..., until_ms: _Optional[int] = ..., limit: _Optional[int] = ..., kind: _Optional[str] = ...) -> None: ...

class HistoryEntry(_message.Message):
    __slots__ = ("kind", "id", "run_id", "node", "machine", "state", "detail", "failure_type", "started_ms", "ended_ms", "attempt", "outcome")
    KIND_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    FAILURE_TYPE_FIELD_NUMBER: _ClassVar[int]
    STARTED_MS_FIELD_NUMBER: _ClassVar[int]
    ENDED_MS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    kind: str
    id: str
    run_id: str
    node: str
    machine: str
    state: str
    detail: str
    failure_type: str
    started_ms: int
    ended_ms: int
    attempt: int
    outcome: str
    def __init__(self, kind: _Optional[str] = ..., id: _Optional[str] = ..., run_id: _Optional[str] = ..., node: _Optional[str] = ..., machine: _Optional[str] = ..., state: _Optional[str] = ..., detail: _Optional[str] = ..., failure_type: _Optional[str] = ..., started_ms: _Optional[int] = ..., ended_ms: _Optional[int] = ..., attempt: _Optional[int] = ..., outcome: _Optional[str] = ...) -> None: ...

class HistoryResponse(_message.Message):
    __slots__ = ("entries", "matched", "retention_ms", "durable")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    DURABLE_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[HistoryEntry]
    matched: int
    retention_ms: int
    durable: bool
    def __init__(self, entries: _Optional[_Iterable[_Union[HistoryEntry, _Mapping]]] = ..., matched: _Optional[int] = ..., retention_ms: _Optional[int] = ..., durable: _Optional[bool] = ...) -> None: ...
