# Vendored by clients/python/tools/vendor_proto.py from generated/python. DO NOT EDIT.
from berth_client._proto.berth.v1 import resources_pb2 as _resources_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GroupStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GROUP_STRATEGY_UNSPECIFIED: _ClassVar[GroupStrategy]
    GROUP_STRATEGY_PACK: _ClassVar[GroupStrategy]
    GROUP_STRATEGY_SPREAD: _ClassVar[GroupStrategy]
    GROUP_STRATEGY_STRICT_PACK: _ClassVar[GroupStrategy]
    GROUP_STRATEGY_STRICT_SPREAD: _ClassVar[GroupStrategy]

class OnMemberLost(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ON_MEMBER_LOST_UNSPECIFIED: _ClassVar[OnMemberLost]
    ON_MEMBER_LOST_REQUEUE: _ClassVar[OnMemberLost]
    ON_MEMBER_LOST_FAIL: _ClassVar[OnMemberLost]
GROUP_STRATEGY_UNSPECIFIED: GroupStrategy
GROUP_STRATEGY_PACK: GroupStrategy
GROUP_STRATEGY_SPREAD: GroupStrategy
GROUP_STRATEGY_STRICT_PACK: GroupStrategy
GROUP_STRATEGY_STRICT_SPREAD: GroupStrategy
ON_MEMBER_LOST_UNSPECIFIED: OnMemberLost
ON_MEMBER_LOST_REQUEUE: OnMemberLost
ON_MEMBER_LOST_FAIL: OnMemberLost

class GroupAsk(_message.Message):
    __slots__ = ("members", "strategy", "on_member_lost", "priority", "priority_class")
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    ON_MEMBER_LOST_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[_resources_pb2.Ask]
    strategy: GroupStrategy
    on_member_lost: OnMemberLost
    priority: int
    priority_class: str
    def __init__(self, members: _Optional[_Iterable[_Union[_resources_pb2.Ask, _Mapping]]] = ..., strategy: _Optional[_Union[GroupStrategy, str]] = ..., on_member_lost: _Optional[_Union[OnMemberLost, str]] = ..., priority: _Optional[int] = ..., priority_class: _Optional[str] = ...) -> None: ...

class GroupRelease(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GroupResume(_message.Message):
    __slots__ = ("group_id", "resume_token")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    resume_token: str
    def __init__(self, group_id: _Optional[str] = ..., resume_token: _Optional[str] = ...) -> None: ...

class ClaimGroupRequest(_message.Message):
    __slots__ = ("ask", "release", "resume")
    ASK_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    ask: GroupAsk
    release: GroupRelease
    resume: GroupResume
    def __init__(self, ask: _Optional[_Union[GroupAsk, _Mapping]] = ..., release: _Optional[_Union[GroupRelease, _Mapping]] = ..., resume: _Optional[_Union[GroupResume, _Mapping]] = ...) -> None: ...

class GroupQueued(_message.Message):
    __slots__ = ("group_id", "member", "dimension", "detail", "position", "requeued")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    REQUEUED_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    member: int
    dimension: str
    detail: str
    position: int
    requeued: bool
    def __init__(self, group_id: _Optional[str] = ..., member: _Optional[int] = ..., dimension: _Optional[str] = ..., detail: _Optional[str] = ..., position: _Optional[int] = ..., requeued: _Optional[bool] = ...) -> None: ...

class GroupMember(_message.Message):
    __slots__ = ("index", "claim_id", "machine", "remote", "allocation")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    index: int
    claim_id: str
    machine: str
    remote: bool
    allocation: _resources_pb2.Allocation
    def __init__(self, index: _Optional[int] = ..., claim_id: _Optional[str] = ..., machine: _Optional[str] = ..., remote: _Optional[bool] = ..., allocation: _Optional[_Union[_resources_pb2.Allocation, _Mapping]] = ...) -> None: ...

class GroupGranted(_message.Message):
    __slots__ = ("group_id", "strategy", "members", "resume_token", "resumed")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    strategy: GroupStrategy
    members: _containers.RepeatedCompositeFieldContainer[GroupMember]
    resume_token: str
    resumed: bool
    def __init__(self, group_id: _Optional[str] = ..., strategy: _Optional[_Union[GroupStrategy, str]] = ..., members: _Optional[_Iterable[_Union[GroupMember, _Mapping]]] = ..., resume_token: _Optional[str] = ..., resumed: _Optional[bool] = ...) -> None: ...

class GroupReleased(_message.Message):
    __slots__ = ("group_id",)
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    def __init__(self, group_id: _Optional[str] = ...) -> None: ...

class ClaimGroupResponse(_message.Message):
    __slots__ = ("queued", "granted", "released", "preempting")
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    PREEMPTING_FIELD_NUMBER: _ClassVar[int]
    queued: GroupQueued
    granted: GroupGranted
    released: GroupReleased
    preempting: GroupPreempting
    def __init__(self, queued: _Optional[_Union[GroupQueued, _Mapping]] = ..., granted: _Optional[_Union[GroupGranted, _Mapping]] = ..., released: _Optional[_Union[GroupReleased, _Mapping]] = ..., preempting: _Optional[_Union[GroupPreempting, _Mapping]] = ...) -> None: ...

class GroupPreempting(_message.Message):
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

class GroupMemberView(_message.Message):
    __slots__ = ("index", "claim_id", "wanted", "machine", "allocation")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    CLAIM_ID_FIELD_NUMBER: _ClassVar[int]
    WANTED_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    index: int
    claim_id: str
    wanted: _resources_pb2.Resources
    machine: str
    allocation: _resources_pb2.Allocation
    def __init__(self, index: _Optional[int] = ..., claim_id: _Optional[str] = ..., wanted: _Optional[_Union[_resources_pb2.Resources, _Mapping]] = ..., machine: _Optional[str] = ..., allocation: _Optional[_Union[_resources_pb2.Allocation, _Mapping]] = ...) -> None: ...

class GroupView(_message.Message):
    __slots__ = ("group_id", "strategy", "state", "members", "ms", "queued", "preempted_by", "preempt_left_ms")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    MS_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    PREEMPTED_BY_FIELD_NUMBER: _ClassVar[int]
    PREEMPT_LEFT_MS_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    strategy: GroupStrategy
    state: str
    members: _containers.RepeatedCompositeFieldContainer[GroupMemberView]
    ms: int
    queued: GroupQueued
    preempted_by: str
    preempt_left_ms: int
    def __init__(self, group_id: _Optional[str] = ..., strategy: _Optional[_Union[GroupStrategy, str]] = ..., state: _Optional[str] = ..., members: _Optional[_Iterable[_Union[GroupMemberView, _Mapping]]] = ..., ms: _Optional[int] = ..., queued: _Optional[_Union[GroupQueued, _Mapping]] = ..., preempted_by: _Optional[str] = ..., preempt_left_ms: _Optional[int] = ...) -> None: ...
