from berth.v1 import calls_pb2 as _calls_pb2
from berth.v1 import groups_pb2 as _groups_pb2
from berth.v1 import history_pb2 as _history_pb2
from berth.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WorkerLinkState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKER_LINK_STATE_UNSPECIFIED: _ClassVar[WorkerLinkState]
    WORKER_LINK_STATE_DISCONNECTED: _ClassVar[WorkerLinkState]
    WORKER_LINK_STATE_RECONNECTED: _ClassVar[WorkerLinkState]

class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERDICT_UNSPECIFIED: _ClassVar[Verdict]
    VERDICT_RUNS_NOW: _ClassVar[Verdict]
    VERDICT_WAITS: _ClassVar[Verdict]
    VERDICT_WAITS_FOR_PROVISIONER: _ClassVar[Verdict]
    VERDICT_CLAMPED: _ClassVar[Verdict]
    VERDICT_IMPOSSIBLE: _ClassVar[Verdict]

class MachineState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MACHINE_STATE_UNSPECIFIED: _ClassVar[MachineState]
    MACHINE_STATE_CONNECTED: _ClassVar[MachineState]
    MACHINE_STATE_DISCONNECTED: _ClassVar[MachineState]

class ProvisionedState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROVISIONED_STATE_UNSPECIFIED: _ClassVar[ProvisionedState]
    PROVISIONED_STATE_STARTING: _ClassVar[ProvisionedState]
    PROVISIONED_STATE_RUNNING: _ClassVar[ProvisionedState]
    PROVISIONED_STATE_IDLE: _ClassVar[ProvisionedState]
    PROVISIONED_STATE_STOPPING: _ClassVar[ProvisionedState]
WORKER_LINK_STATE_UNSPECIFIED: WorkerLinkState
WORKER_LINK_STATE_DISCONNECTED: WorkerLinkState
WORKER_LINK_STATE_RECONNECTED: WorkerLinkState
VERDICT_UNSPECIFIED: Verdict
VERDICT_RUNS_NOW: Verdict
VERDICT_WAITS: Verdict
VERDICT_WAITS_FOR_PROVISIONER: Verdict
VERDICT_CLAMPED: Verdict
VERDICT_IMPOSSIBLE: Verdict
MACHINE_STATE_UNSPECIFIED: MachineState
MACHINE_STATE_CONNECTED: MachineState
MACHINE_STATE_DISCONNECTED: MachineState
PROVISIONED_STATE_UNSPECIFIED: ProvisionedState
PROVISIONED_STATE_STARTING: ProvisionedState
PROVISIONED_STATE_RUNNING: ProvisionedState
PROVISIONED_STATE_IDLE: ProvisionedState
PROVISIONED_STATE_STOPPING: ProvisionedState

class Release(_message.Message):
    __slots__ = ("requeue",)
    REQUEUE_FIELD_NUMBER: _ClassVar[int]
    requeue: bool
    def __init__(self, requeue: _Optional[bool] = ...) -> None: ...

class ClaimRequest(_message.Message):
    __slots__ = ("ask", "release", "resume")
    ASK_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    ask: _resources_pb2.Ask
    release: Release
    resume: Resume
    def __init__(self, ask: _Optional[_Union[_resources_pb2.Ask, _Mapping]] = ..., release: _Optional[_Union[Release, _Mapping]] = ..., resume: _Optional[_Union[Resume, _Mapping]] = ...) -> None: ...

class Resume(_message.Message):
    __slots__ = ("claim_id", "resume_token")
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    resume_token: str
    def __init__(self, claim_id: _Optional[str] = ..., resume_token: _Optional[str] = ...) -> None: ...

class Queued(_message.Message):
    __slots__ = ("detail", "wanted", "best_machine", "best_free", "machines_able", "position", "claim_id", "asked", "priority", "requeued")
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    WANTED_FIELD_NUMBER: _ClassVar[int]
    BEST_MACHINE_FIELD_NUMBER: _ClassVar[int]
    BEST_FREE_FIELD_NUMBER: _ClassVar[int]
    MACHINES_ABLE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    ASKED_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    REQUEUED_FIELD_NUMBER: _ClassVar[int]
    detail: str
    wanted: _resources_pb2.Resources
    best_machine: str
    best_free: _resources_pb2.Resources
    machines_able: int
    position: int
    claim_id: str
    asked: _resources_pb2.Resources
    priority: int
    requeued: bool
    def __init__(self, detail: _Optional[str] = ..., wanted: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., best_machine: _Optional[str] = ..., best_free: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., machines_able: _Optional[int] = ..., position: _Optional[int] = ..., claim_id: _Optional[str] = ..., asked: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., priority: _Optional[int] = ..., requeued: _Optional[bool] = ...) -> None: ...

class Granted(_message.Message):
    __slots__ = ("claim_id", "machine", "remote", "allocation", "clamped", "fell_back", "asked", "resume_token", "resumed")
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    CLAMPED_FIELD_NUMBER: _ClassVar[int]
    FELL_BACK_FIELD_NUMBER: _ClassVar[int]
    ASKED_FIELD_NUMBER: _ClassVar[int]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    machine: str
    remote: bool
    allocation: _resources_pb2.Allocation
    clamped: bool
    fell_back: bool
    asked: _resources_pb2.Resources
    resume_token: str
    resumed: bool
    def __init__(self, claim_id: _Optional[str] = ..., machine: _Optional[str] = ..., remote: _Optional[bool] = ..., allocation: _Optional[_Union[_resources_pb2.Allocation, _Mapping]] = ..., clamped: _Optional[bool] = ..., fell_back: _Optional[bool] = ..., asked: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., resume_token: _Optional[str] = ..., resumed: _Optional[bool] = ...) -> None: ...

class Released(_message.Message):
    __slots__ = ("claim_id",)
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    def __init__(self, claim_id: _Optional[str] = ...) -> None: ...

class ClaimResponse(_message.Message):
    __slots__ = ("queued", "granted", "released", "preempting")
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    PREEMPTING_FIELD_NUMBER: _ClassVar[int]
    queued: Queued
    granted: Granted
    released: Released
    preempting: Preempting
    def __init__(self, queued: _Optional[_Union[Queued, _Mapping]] = ..., granted: _Optional[_Union[Granted, _Mapping]] = ..., released: _Optional[_Union[Released, _Mapping]] = ..., preempting: _Optional[_Union[Preempting, _Mapping]] = ...) -> None: ...

class Preempting(_message.Message):
    __slots__ = ("by_claim_id", "by_priority", "grace_ms", "machine", "detail")
    BY_CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    BY_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    by_claim_id: str
    by_priority: int
    grace_ms: int
    machine: str
    detail: str
    def __init__(self, by_claim_id: _Optional[str] = ..., by_priority: _Optional[int] = ..., grace_ms: _Optional[int] = ..., machine: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ("claim_id", "ask", "command", "source", "flow", "node", "run_id", "timeout_ms", "disconnect_grace_ms", "follow", "max_retries", "retry_on_failure")
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    ASK_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    DISCONNECT_GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    MAX_RETRIES_FIELD_NUMBER: _ClassVar[int]
    RETRY_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    ask: _resources_pb2.Ask
    command: _calls_pb2.Command
    source: _calls_pb2.PythonSource
    flow: str
    node: str
    run_id: str
    timeout_ms: int
    disconnect_grace_ms: int
    follow: FollowCall
    max_retries: int
    retry_on_failure: bool
    def __init__(self, claim_id: _Optional[str] = ..., ask: _Optional[_Union[_resources_pb2.Ask, _Mapping]] = ..., command: _Optional[_Union[_calls_pb2.Command, _Mapping]] = ..., source: _Optional[_Union[_calls_pb2.PythonSource, _Mapping]] = ..., flow: _Optional[str] = ..., node: _Optional[str] = ..., run_id: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., disconnect_grace_ms: _Optional[int] = ..., follow: _Optional[_Union[FollowCall, _Mapping]] = ..., max_retries: _Optional[int] = ..., retry_on_failure: _Optional[bool] = ...) -> None: ...

class Retrying(_message.Message):
    __slots__ = ("attempt", "reason", "machine", "call_id", "previous_call_id")
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    reason: str
    machine: str
    call_id: str
    previous_call_id: str
    def __init__(self, attempt: _Optional[int] = ..., reason: _Optional[str] = ..., machine: _Optional[str] = ..., call_id: _Optional[str] = ..., previous_call_id: _Optional[str] = ...) -> None: ...

class FollowCall(_message.Message):
    __slots__ = ("call_id", "after_seq")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    after_seq: int
    def __init__(self, call_id: _Optional[str] = ..., after_seq: _Optional[int] = ...) -> None: ...

class WorkerLink(_message.Message):
    __slots__ = ("state", "machine", "hold_left_ms", "detail")
    STATE_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    HOLD_LEFT_MS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    state: WorkerLinkState
    machine: str
    hold_left_ms: int
    detail: str
    def __init__(self, state: _Optional[_Union[WorkerLinkState, str]] = ..., machine: _Optional[str] = ..., hold_left_ms: _Optional[int] = ..., detail: _Optional[str] = ...) -> None: ...

class CallStarted(_message.Message):
    __slots__ = ("call_id", "machine", "allocation", "clamped", "asked", "fell_back")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    CLAMPED_FIELD_NUMBER: _ClassVar[int]
    ASKED_FIELD_NUMBER: _ClassVar[int]
    FELL_BACK_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    machine: str
    allocation: _resources_pb2.Allocation
    clamped: bool
    asked: _resources_pb2.Resources
    fell_back: bool
    def __init__(self, call_id: _Optional[str] = ..., machine: _Optional[str] = ..., allocation: _Optional[_Union[_resources_pb2.Allocation, _Mapping]] = ..., clamped: _Optional[bool] = ..., asked: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., fell_back: _Optional[bool] = ...) -> None: ...

class RunResponse(_message.Message):
    __slots__ = ("started", "event", "result", "failure", "link", "retrying", "preempting")
    STARTED_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    RETRYING_FIELD_NUMBER: _ClassVar[int]
    PREEMPTING_FIELD_NUMBER: _ClassVar[int]
    started: CallStarted
    event: _calls_pb2.Event
    result: _calls_pb2.Result
    failure: _calls_pb2.Failure
    link: WorkerLink
    retrying: Retrying
    preempting: Preempting
    def __init__(self, started: _Optional[_Union[CallStarted, _Mapping]] = ..., event: _Optional[_Union[_calls_pb2.Event, _Mapping]] = ..., result: _Optional[_Union[_calls_pb2.Result, _Mapping]] = ..., failure: _Optional[_Union[_calls_pb2.Failure, _Mapping]] = ..., link: _Optional[_Union[WorkerLink, _Mapping]] = ..., retrying: _Optional[_Union[Retrying, _Mapping]] = ..., preempting: _Optional[_Union[Preempting, _Mapping]] = ...) -> None: ...

class RunWholeRequest(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: RunRequest
    def __init__(self, run: _Optional[_Union[RunRequest, _Mapping]] = ...) -> None: ...

class RunWholeResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[RunResponse]
    def __init__(self, messages: _Optional[_Iterable[_Union[RunResponse, _Mapping]]] = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ("calls", "claims")
    CALLS_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    calls: int
    claims: int
    def __init__(self, calls: _Optional[int] = ..., claims: _Optional[int] = ...) -> None: ...

class CompileRequest(_message.Message):
    __slots__ = ("label", "flow", "node", "source")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    label: str
    flow: str
    node: str
    source: str
    def __init__(self, label: _Optional[str] = ..., flow: _Optional[str] = ..., node: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class CompileResponse(_message.Message):
    __slots__ = ("checked", "ok", "failure", "worker", "detail")
    CHECKED_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    checked: bool
    ok: bool
    failure: _calls_pb2.Failure
    worker: str
    detail: str
    def __init__(self, checked: _Optional[bool] = ..., ok: _Optional[bool] = ..., failure: _Optional[_Union[_calls_pb2.Failure, _Mapping]] = ..., worker: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class SatisfiableRequest(_message.Message):
    __slots__ = ("ask", "group")
    ASK_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ask: _resources_pb2.Ask
    group: _groups_pb2.GroupAsk
    def __init__(self, ask: _Optional[_Union[_resources_pb2.Ask, _Mapping]] = ..., group: _Optional[_Union[_groups_pb2.GroupAsk, _Mapping]] = ...) -> None: ...

class SatisfiableResponse(_message.Message):
    __slots__ = ("wait_for", "verdict", "clamped_to", "limiting", "detail")
    WAIT_FOR_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    CLAMPED_TO_FIELD_NUMBER: _ClassVar[int]
    LIMITING_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    wait_for: str
    verdict: Verdict
    clamped_to: _resources_pb2.Resources
    limiting: str
    detail: str
    def __init__(self, wait_for: _Optional[str] = ..., verdict: _Optional[_Union[Verdict, str]] = ..., clamped_to: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., limiting: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class GetSnapshotRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Machine(_message.Message):
    __slots__ = ("name", "labels", "remote", "total", "free", "free_gpu_ids", "claims", "running_calls", "max_parallel", "version", "warm_pools", "state", "hold_left_ms", "gpu_shares")
    class GpuSharesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: float
        def __init__(self, key: _Optional[int] = ..., value: _Optional[float] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    FREE_FIELD_NUMBER: _ClassVar[int]
    FREE_GPU_IDS_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_CALLS_FIELD_NUMBER: _ClassVar[int]
    MAX_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    WARM_POOLS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    HOLD_LEFT_MS_FIELD_NUMBER: _ClassVar[int]
    GPU_SHARES_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.RepeatedScalarFieldContainer[str]
    remote: bool
    total: _resources_pb2.Inventory
    free: _resources_pb2.Resources
    free_gpu_ids: _containers.RepeatedScalarFieldContainer[int]
    claims: int
    running_calls: int
    max_parallel: int
    version: str
    warm_pools: _calls_pb2.WarmPools
    state: MachineState
    hold_left_ms: int
    gpu_shares: _containers.ScalarMap[int, float]
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Iterable[str]] = ..., remote: _Optional[bool] = ..., total: _Optional[_Union[_resources_pb2.Inventory, _Mapping]] = ..., free: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., free_gpu_ids: _Optional[_Iterable[int]] = ..., claims: _Optional[int] = ..., running_calls: _Optional[int] = ..., max_parallel: _Optional[int] = ..., version: _Optional[str] = ..., warm_pools: _Optional[_Union[_calls_pb2.WarmPools, _Mapping]] = ..., state: _Optional[_Union[MachineState, str]] = ..., hold_left_ms: _Optional[int] = ..., gpu_shares: _Optional[_Mapping[int, float]] = ...) -> None: ...

class WaitingClaim(_message.Message):
    __slots__ = ("claim_id", "node", "run_id", "reason", "waited_ms", "label", "priority", "priority_class")
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    WAITED_MS_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    node: str
    run_id: str
    reason: Queued
    waited_ms: int
    label: str
    priority: int
    priority_class: str
    def __init__(self, claim_id: _Optional[str] = ..., node: _Optional[str] = ..., run_id: _Optional[str] = ..., reason: _Optional[_Union[Queued, _Mapping]] = ..., waited_ms: _Optional[int] = ..., label: _Optional[str] = ..., priority: _Optional[int] = ..., priority_class: _Optional[str] = ...) -> None: ...

class HeldClaim(_message.Message):
    __slots__ = ("claim_id", "node", "run_id", "machine", "allocation", "held_ms", "awaiting_holder", "hold_left_ms", "priority", "preempted_by", "preempt_left_ms")
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    HELD_MS_FIELD_NUMBER: _ClassVar[int]
    AWAITING_HOLDER_FIELD_NUMBER: _ClassVar[int]
    HOLD_LEFT_MS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTED_BY_FIELD_NUMBER: _ClassVar[int]
    PREEMPT_LEFT_MS_FIELD_NUMBER: _ClassVar[int]
    claim_id: str
    node: str
    run_id: str
    machine: str
    allocation: _resources_pb2.Allocation
    held_ms: int
    awaiting_holder: bool
    hold_left_ms: int
    priority: int
    preempted_by: str
    preempt_left_ms: int
    def __init__(self, claim_id: _Optional[str] = ..., node: _Optional[str] = ..., run_id: _Optional[str] = ..., machine: _Optional[str] = ..., allocation: _Optional[_Union[_resources_pb2.Allocation, _Mapping]] = ..., held_ms: _Optional[int] = ..., awaiting_holder: _Optional[bool] = ..., hold_left_ms: _Optional[int] = ..., priority: _Optional[int] = ..., preempted_by: _Optional[str] = ..., preempt_left_ms: _Optional[int] = ...) -> None: ...

class CallInFlight(_message.Message):
    __slots__ = ("call_id", "run_id", "machine", "elapsed_ms")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    run_id: str
    machine: str
    elapsed_ms: int
    def __init__(self, call_id: _Optional[str] = ..., run_id: _Optional[str] = ..., machine: _Optional[str] = ..., elapsed_ms: _Optional[int] = ...) -> None: ...

class ProvisionerStatus(_message.Message):
    __slots__ = ("name", "shapes", "status", "kind", "max_machines", "machines", "last_error", "shape_labels")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHAPES_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MAX_MACHINES_FIELD_NUMBER: _ClassVar[int]
    MACHINES_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    SHAPE_LABELS_FIELD_NUMBER: _ClassVar[int]
    name: str
    shapes: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Inventory]
    status: str
    kind: str
    max_machines: int
    machines: _containers.RepeatedCompositeFieldContainer[ProvisionedMachine]
    last_error: str
    shape_labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., shapes: _Optional[_Iterable[_Union[_resources_pb2.Inventory, _Mapping]]] = ..., status: _Optional[str] = ..., kind: _Optional[str] = ..., max_machines: _Optional[int] = ..., machines: _Optional[_Iterable[_Union[ProvisionedMachine, _Mapping]]] = ..., last_error: _Optional[str] = ..., shape_labels: _Optional[_Iterable[str]] = ...) -> None: ...

class ProvisionedMachine(_message.Message):
    __slots__ = ("name", "engine_id", "state", "detail", "since_ms")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENGINE_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    name: str
    engine_id: str
    state: ProvisionedState
    detail: str
    since_ms: int
    def __init__(self, name: _Optional[str] = ..., engine_id: _Optional[str] = ..., state: _Optional[_Union[ProvisionedState, str]] = ..., detail: _Optional[str] = ..., since_ms: _Optional[int] = ...) -> None: ...

class GetSnapshotResponse(_message.Message):
    __slots__ = ("machines", "waiting", "calls", "provisioners", "held", "cluster", "pools", "groups", "tenants")
    MACHINES_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    PROVISIONERS_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    machines: _containers.RepeatedCompositeFieldContainer[Machine]
    waiting: _containers.RepeatedCompositeFieldContainer[WaitingClaim]
    calls: _containers.RepeatedCompositeFieldContainer[CallInFlight]
    provisioners: _containers.RepeatedCompositeFieldContainer[ProvisionerStatus]
    held: _containers.RepeatedCompositeFieldContainer[HeldClaim]
    cluster: ClusterStatus
    pools: _containers.RepeatedCompositeFieldContainer[Pool]
    groups: _containers.RepeatedCompositeFieldContainer[_groups_pb2.GroupView]
    tenants: _containers.RepeatedCompositeFieldContainer[TenantUsage]
    def __init__(self, machines: _Optional[_Iterable[_Union[Machine, _Mapping]]] = ..., waiting: _Optional[_Iterable[_Union[WaitingClaim, _Mapping]]] = ..., calls: _Optional[_Iterable[_Union[CallInFlight, _Mapping]]] = ..., provisioners: _Optional[_Iterable[_Union[ProvisionerStatus, _Mapping]]] = ..., held: _Optional[_Iterable[_Union[HeldClaim, _Mapping]]] = ..., cluster: _Optional[_Union[ClusterStatus, _Mapping]] = ..., pools: _Optional[_Iterable[_Union[Pool, _Mapping]]] = ..., groups: _Optional[_Iterable[_Union[_groups_pb2.GroupView, _Mapping]]] = ..., tenants: _Optional[_Iterable[_Union[TenantUsage, _Mapping]]] = ...) -> None: ...

class TenantUsage(_message.Message):
    __slots__ = ("tenant", "cohort", "resources", "weight", "dominant_share")
    TENANT_FIELD_NUMBER: _ClassVar[int]
    COHORT_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    DOMINANT_SHARE_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    cohort: str
    resources: _containers.RepeatedCompositeFieldContainer[TenantResource]
    weight: float
    dominant_share: float
    def __init__(self, tenant: _Optional[str] = ..., cohort: _Optional[str] = ..., resources: _Optional[_Iterable[_Union[TenantResource, _Mapping]]] = ..., weight: _Optional[float] = ..., dominant_share: _Optional[float] = ...) -> None: ...

class TenantResource(_message.Message):
    __slots__ = ("name", "used", "nominal", "borrowing_limit")
    NAME_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    NOMINAL_FIELD_NUMBER: _ClassVar[int]
    BORROWING_LIMIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    used: float
    nominal: float
    borrowing_limit: float
    def __init__(self, name: _Optional[str] = ..., used: _Optional[float] = ..., nominal: _Optional[float] = ..., borrowing_limit: _Optional[float] = ...) -> None: ...

class Pool(_message.Message):
    __slots__ = ("name", "total", "free")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    FREE_FIELD_NUMBER: _ClassVar[int]
    name: str
    total: float
    free: float
    def __init__(self, name: _Optional[str] = ..., total: _Optional[float] = ..., free: _Optional[float] = ...) -> None: ...

class ClusterStatus(_message.Message):
    __slots__ = ("name", "role", "leader", "epoch", "leader_since_ms", "standbys")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    STANDBYS_FIELD_NUMBER: _ClassVar[int]
    name: str
    role: str
    leader: str
    epoch: int
    leader_since_ms: int
    standbys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., role: _Optional[str] = ..., leader: _Optional[str] = ..., epoch: _Optional[int] = ..., leader_since_ms: _Optional[int] = ..., standbys: _Optional[_Iterable[str]] = ...) -> None: ...

class DrainRequest(_message.Message):
    __slots__ = ("grace_ms",)
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    grace_ms: int
    def __init__(self, grace_ms: _Optional[int] = ...) -> None: ...

class DrainResponse(_message.Message):
    __slots__ = ("finished", "cancelled")
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    finished: int
    cancelled: int
    def __init__(self, finished: _Optional[int] = ..., cancelled: _Optional[int] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WatchEventsResponse(_message.Message):
    __slots__ = ("kind", "detail", "machine", "node", "claim_id", "run_id", "call_id", "time_ms", "seq", "asked", "granted", "gpu_ids", "fell_back", "clamped", "queued", "label", "outcome", "failure_type", "duration_ms", "limiting")
    KIND_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ASKED_FIELD_NUMBER: _ClassVar[int]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    GPU_IDS_FIELD_NUMBER: _ClassVar[int]
    FELL_BACK_FIELD_NUMBER: _ClassVar[int]
    CLAMPED_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    FAILURE_TYPE_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    LIMITING_FIELD_NUMBER: _ClassVar[int]
    kind: str
    detail: str
    machine: str
    node: str
    claim_id: str
    run_id: str
    call_id: str
    time_ms: str
    seq: str
    asked: _resources_pb2.Resources
    granted: _resources_pb2.Resources
    gpu_ids: _containers.RepeatedScalarFieldContainer[int]
    fell_back: bool
    clamped: bool
    queued: Queued
    label: str
    outcome: str
    failure_type: str
    duration_ms: int
    limiting: str
    def __init__(self, kind: _Optional[str] = ..., detail: _Optional[str] = ..., machine: _Optional[str] = ..., node: _Optional[str] = ..., claim_id: _Optional[str] = ..., run_id: _Optional[str] = ..., call_id: _Optional[str] = ..., time_ms: _Optional[str] = ..., seq: _Optional[str] = ..., asked: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., granted: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., gpu_ids: _Optional[_Iterable[int]] = ..., fell_back: _Optional[bool] = ..., clamped: _Optional[bool] = ..., queued: _Optional[_Union[Queued, _Mapping]] = ..., label: _Optional[str] = ..., outcome: _Optional[str] = ..., failure_type: _Optional[str] = ..., duration_ms: _Optional[int] = ..., limiting: _Optional[str] = ...) -> None: ...
