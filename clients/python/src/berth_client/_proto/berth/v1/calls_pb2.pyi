# Vendored by clients/python/tools/vendor_proto.py from generated/python. DO NOT EDIT.
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Command(_message.Message):
    __slots__ = ("argv", "env", "cwd")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ARGV_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    argv: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    cwd: str
    def __init__(self, argv: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., cwd: _Optional[str] = ...) -> None: ...

class PythonSource(_message.Message):
    __slots__ = ("source", "kwargs")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    KWARGS_FIELD_NUMBER: _ClassVar[int]
    source: str
    kwargs: _struct_pb2.Struct
    def __init__(self, source: _Optional[str] = ..., kwargs: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class Metric(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...

class LogLine(_message.Message):
    __slots__ = ("stream", "line")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    stream: str
    line: str
    def __init__(self, stream: _Optional[str] = ..., line: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("call_id", "metric", "log", "logs", "seq")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    LOGS_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    metric: Metric
    log: LogLine
    logs: LogLines
    seq: int
    def __init__(self, call_id: _Optional[str] = ..., metric: _Optional[_Union[Metric, _Mapping]] = ..., log: _Optional[_Union[LogLine, _Mapping]] = ..., logs: _Optional[_Union[LogLines, _Mapping]] = ..., seq: _Optional[int] = ...) -> None: ...

class Result(_message.Message):
    __slots__ = ("call_id", "value")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    value: _struct_pb2.Value
    def __init__(self, call_id: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class Failure(_message.Message):
    __slots__ = ("call_id", "type", "message", "traceback")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TRACEBACK_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    type: str
    message: str
    traceback: str
    def __init__(self, call_id: _Optional[str] = ..., type: _Optional[str] = ..., message: _Optional[str] = ..., traceback: _Optional[str] = ...) -> None: ...

class LogLines(_message.Message):
    __slots__ = ("stream", "lines")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    stream: str
    lines: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, stream: _Optional[str] = ..., lines: _Optional[_Iterable[str]] = ...) -> None: ...

class WarmPools(_message.Message):
    __slots__ = ("pools", "idle", "busy", "hits", "misses", "prestarted", "retired", "cap")
    POOLS_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    MISSES_FIELD_NUMBER: _ClassVar[int]
    PRESTARTED_FIELD_NUMBER: _ClassVar[int]
    RETIRED_FIELD_NUMBER: _ClassVar[int]
    CAP_FIELD_NUMBER: _ClassVar[int]
    pools: int
    idle: int
    busy: int
    hits: int
    misses: int
    prestarted: int
    retired: int
    cap: int
    def __init__(self, pools: _Optional[int] = ..., idle: _Optional[int] = ..., busy: _Optional[int] = ..., hits: _Optional[int] = ..., misses: _Optional[int] = ..., prestarted: _Optional[int] = ..., retired: _Optional[int] = ..., cap: _Optional[int] = ...) -> None: ...
