# Vendored by clients/python/tools/vendor_proto.py from generated/python. DO NOT EDIT.
from berth_client._proto.berth.v1 import calls_pb2 as _calls_pb2
from berth_client._proto.berth.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Hello(_message.Message):
    __slots__ = ("name", "labels", "inventory", "max_parallel", "version", "agent_id", "instance_id", "held_calls", "disconnect_grace_ms")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    INVENTORY_FIELD_NUMBER: _ClassVar[int]
    MAX_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    HELD_CALLS_FIELD_NUMBER: _ClassVar[int]
    DISCONNECT_GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.RepeatedScalarFieldContainer[str]
    inventory: _resources_pb2.Inventory
    max_parallel: int
    version: str
    agent_id: str
    instance_id: str
    held_calls: _containers.RepeatedCompositeFieldContainer[HeldCall]
    disconnect_grace_ms: int
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Iterable[str]] = ..., inventory: _Optional[_Union[_resources_pb2.Inventory, _Mapping]] = ..., max_parallel: _Optional[int] = ..., version: _Optional[str] = ..., agent_id: _Optional[str] = ..., instance_id: _Optional[str] = ..., held_calls: _Optional[_Iterable[_Union[HeldCall, _Mapping]]] = ..., disconnect_grace_ms: _Optional[int] = ...) -> None: ...

class HeldCall(_message.Message):
    __slots__ = ("call_id", "last_seq", "ended")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    last_seq: int
    ended: bool
    def __init__(self, call_id: _Optional[str] = ..., last_seq: _Optional[int] = ..., ended: _Optional[bool] = ...) -> None: ...

class CallAck(_message.Message):
    __slots__ = ("call_id", "seq", "ended")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    seq: int
    ended: bool
    def __init__(self, call_id: _Optional[str] = ..., seq: _Optional[int] = ..., ended: _Optional[bool] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("calls",)
    CALLS_FIELD_NUMBER: _ClassVar[int]
    calls: _containers.RepeatedCompositeFieldContainer[CallAck]
    def __init__(self, calls: _Optional[_Iterable[_Union[CallAck, _Mapping]]] = ...) -> None: ...

class Stopping(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("call_id", "warm_pools")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    WARM_POOLS_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    warm_pools: _calls_pb2.WarmPools
    def __init__(self, call_id: _Optional[str] = ..., warm_pools: _Optional[_Union[_calls_pb2.WarmPools, _Mapping]] = ...) -> None: ...

class CompileResult(_message.Message):
    __slots__ = ("request_id", "ok", "failure")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    ok: bool
    failure: _calls_pb2.Failure
    def __init__(self, request_id: _Optional[str] = ..., ok: _Optional[bool] = ..., failure: _Optional[_Union[_calls_pb2.Failure, _Mapping]] = ...) -> None: ...

class WorkerStreamRequest(_message.Message):
    __slots__ = ("hello", "event", "heartbeat", "result", "failure", "compile_result", "stopping")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    COMPILE_RESULT_FIELD_NUMBER: _ClassVar[int]
    STOPPING_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    event: _calls_pb2.Event
    heartbeat: Heartbeat
    result: _calls_pb2.Result
    failure: _calls_pb2.Failure
    compile_result: CompileResult
    stopping: Stopping
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., event: _Optional[_Union[_calls_pb2.Event, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., result: _Optional[_Union[_calls_pb2.Result, _Mapping]] = ..., failure: _Optional[_Union[_calls_pb2.Failure, _Mapping]] = ..., compile_result: _Optional[_Union[CompileResult, _Mapping]] = ..., stopping: _Optional[_Union[Stopping, _Mapping]] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("server_version", "heartbeat_ms", "calls")
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_MS_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    server_version: str
    heartbeat_ms: int
    calls: _containers.RepeatedCompositeFieldContainer[CallAck]
    def __init__(self, server_version: _Optional[str] = ..., heartbeat_ms: _Optional[int] = ..., calls: _Optional[_Iterable[_Union[CallAck, _Mapping]]] = ...) -> None: ...

class Call(_message.Message):
    __slots__ = ("call_id", "run_id", "flow", "node", "allocation", "command", "source", "timeout_ms", "disconnect_grace_ms")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    DISCONNECT_GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    run_id: str
    flow: str
    node: str
    allocation: _resources_pb2.Allocation
    command: _calls_pb2.Command
    source: _calls_pb2.PythonSource
    timeout_ms: int
    disconnect_grace_ms: int
    def __init__(self, call_id: _Optional[str] = ..., run_id: _Optional[str] = ..., flow: _Optional[str] = ..., node: _Optional[str] = ..., allocation: _Optional[_Union[_resources_pb2.Allocation, _Mapping]] = ..., command: _Optional[_Union[_calls_pb2.Command, _Mapping]] = ..., source: _Optional[_Union[_calls_pb2.PythonSource, _Mapping]] = ..., timeout_ms: _Optional[int] = ..., disconnect_grace_ms: _Optional[int] = ...) -> None: ...

class CancelCall(_message.Message):
    __slots__ = ("call_id", "reason")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    reason: str
    def __init__(self, call_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CompileCall(_message.Message):
    __slots__ = ("request_id", "flow", "node", "source")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    flow: str
    node: str
    source: str
    def __init__(self, request_id: _Optional[str] = ..., flow: _Optional[str] = ..., node: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class Drain(_message.Message):
    __slots__ = ("grace_ms",)
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    grace_ms: int
    def __init__(self, grace_ms: _Optional[int] = ...) -> None: ...

class WorkerStreamResponse(_message.Message):
    __slots__ = ("welcome", "call", "cancel", "compile", "drain", "ack", "epoch")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    COMPILE_FIELD_NUMBER: _ClassVar[int]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    call: Call
    cancel: CancelCall
    compile: CompileCall
    drain: Drain
    ack: Ack
    epoch: int
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., call: _Optional[_Union[Call, _Mapping]] = ..., cancel: _Optional[_Union[CancelCall, _Mapping]] = ..., compile: _Optional[_Union[CompileCall, _Mapping]] = ..., drain: _Optional[_Union[Drain, _Mapping]] = ..., ack: _Optional[_Union[Ack, _Mapping]] = ..., epoch: _Optional[int] = ...) -> None: ...
