from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Policy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POLICY_UNSPECIFIED: _ClassVar[Policy]
    POLICY_PREFER: _ClassVar[Policy]
    POLICY_REQUIRE: _ClassVar[Policy]

class OnOversize(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ON_OVERSIZE_UNSPECIFIED: _ClassVar[OnOversize]
    ON_OVERSIZE_CLAMP: _ClassVar[OnOversize]
    ON_OVERSIZE_FAIL: _ClassVar[OnOversize]

class OnPreempt(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ON_PREEMPT_UNSPECIFIED: _ClassVar[OnPreempt]
    ON_PREEMPT_REQUEUE: _ClassVar[OnPreempt]
    ON_PREEMPT_CANCEL: _ClassVar[OnPreempt]
POLICY_UNSPECIFIED: Policy
POLICY_PREFER: Policy
POLICY_REQUIRE: Policy
ON_OVERSIZE_UNSPECIFIED: OnOversize
ON_OVERSIZE_CLAMP: OnOversize
ON_OVERSIZE_FAIL: OnOversize
ON_PREEMPT_UNSPECIFIED: OnPreempt
ON_PREEMPT_REQUEUE: OnPreempt
ON_PREEMPT_CANCEL: OnPreempt

class Inventory(_message.Message):
    __slots__ = ("cpus", "gpu_ids", "ram_mb", "resources", "gpu_type", "gpu_names")
    class ResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    CPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_IDS_FIELD_NUMBER: _ClassVar[int]
    RAM_MB_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    GPU_NAMES_FIELD_NUMBER: _ClassVar[int]
    cpus: int
    gpu_ids: _containers.RepeatedScalarFieldContainer[int]
    ram_mb: int
    resources: _containers.ScalarMap[str, float]
    gpu_type: str
    gpu_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cpus: _Optional[int] = ..., gpu_ids: _Optional[_Iterable[int]] = ..., ram_mb: _Optional[int] = ..., resources: _Optional[_Mapping[str, float]] = ..., gpu_type: _Optional[str] = ..., gpu_names: _Optional[_Iterable[str]] = ...) -> None: ...

class Resources(_message.Message):
    __slots__ = ("cpus", "gpus", "ram_mb", "resources", "gpu_share")
    class ResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    CPUS_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    RAM_MB_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    GPU_SHARE_FIELD_NUMBER: _ClassVar[int]
    cpus: int
    gpus: int
    ram_mb: int
    resources: _containers.ScalarMap[str, float]
    gpu_share: float
    def __init__(self, cpus: _Optional[int] = ..., gpus: _Optional[int] = ..., ram_mb: _Optional[int] = ..., resources: _Optional[_Mapping[str, float]] = ..., gpu_share: _Optional[float] = ...) -> None: ...

class Ask(_message.Message):
    __slots__ = ("cpus", "gpus", "ram_mb", "label", "policy", "node", "run_id", "env", "on_oversize", "hold_ms", "resources", "gpu_share", "gpu_type", "priority", "priority_class", "on_preempt")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class ResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    CPUS_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    RAM_MB_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    ON_OVERSIZE_FIELD_NUMBER: _ClassVar[int]
    HOLD_MS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    GPU_SHARE_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_FIELD_NUMBER: _ClassVar[int]
    ON_PREEMPT_FIELD_NUMBER: _ClassVar[int]
    cpus: int
    gpus: int
    ram_mb: int
    label: str
    policy: Policy
    node: str
    run_id: str
    env: _containers.ScalarMap[str, str]
    on_oversize: OnOversize
    hold_ms: int
    resources: _containers.ScalarMap[str, float]
    gpu_share: float
    gpu_type: str
    priority: int
    priority_class: str
    on_preempt: OnPreempt
    def __init__(self, cpus: _Optional[int] = ..., gpus: _Optional[int] = ..., ram_mb: _Optional[int] = ..., label: _Optional[str] = ..., policy: _Optional[_Union[Policy, str]] = ..., node: _Optional[str] = ..., run_id: _Optional[str] = ..., env: _Optional[_Mapping[str, str]] = ..., on_oversize: _Optional[_Union[OnOversize, str]] = ..., hold_ms: _Optional[int] = ..., resources: _Optional[_Mapping[str, float]] = ..., gpu_share: _Optional[float] = ..., gpu_type: _Optional[str] = ..., priority: _Optional[int] = ..., priority_class: _Optional[str] = ..., on_preempt: _Optional[_Union[OnPreempt, str]] = ...) -> None: ...

class Allocation(_message.Message):
    __slots__ = ("cpus", "gpu_ids", "ram_mb", "env", "resources", "gpu_share")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class ResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    CPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_IDS_FIELD_NUMBER: _ClassVar[int]
    RAM_MB_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    GPU_SHARE_FIELD_NUMBER: _ClassVar[int]
    cpus: int
    gpu_ids: _containers.RepeatedScalarFieldContainer[int]
    ram_mb: int
    env: _containers.ScalarMap[str, str]
    resources: _containers.ScalarMap[str, float]
    gpu_share: float
    def __init__(self, cpus: _Optional[int] = ..., gpu_ids: _Optional[_Iterable[int]] = ..., ram_mb: _Optional[int] = ..., env: _Optional[_Mapping[str, str]] = ..., resources: _Optional[_Mapping[str, float]] = ..., gpu_share: _Optional[float] = ...) -> None: ...
