"""What a tfdbg2 debug tensor (a health vector, or the tensor itself) says of the traced
tensor: its dtype, a digest of its value, its rank, whether it is all zeros.

In: a debug tensor's serialized ``TensorProto`` and its ``TensorDebugMode``. Out:
``health_dtype`` (a ``DT_*`` name, ``DTYPE_SOME_FLOAT``, ``DTYPE_UNKNOWN`` or ""),
``health_digest`` (equal for two traces of one tensor; its low byte the rank, its next
bit whether every element is zero), ``digest_rank`` and ``digest_all_zeros``; the
``TensorDebugMode`` numbers and names, the dtypes' names.
"""
from __future__ import annotations

import hashlib
import math
import struct
from typing import Optional

from ..schema import LEN, VARINT, message_fields

__all__ = ["health_spec", "HealthSpec", "SHAPE_INDEX",
           "NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "SHAPE",
           "FULL_TENSOR", "DEBUG_MODE_NAMES", "DTYPE_NAMES", "DTYPE_UNKNOWN", "DTYPE_SOME_FLOAT",
           "health_dtype", "health_digest", "digest_rank", "digest_all_zeros"]



# tensorflow/core/framework/types.proto: the dtypes a health summary can name.
DTYPE_NAMES = {1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8", 5: "DT_INT16",
               6: "DT_INT8", 7: "DT_STRING", 8: "DT_COMPLEX64", 9: "DT_INT64", 10: "DT_BOOL",
               14: "DT_BFLOAT16", 17: "DT_UINT16", 18: "DT_COMPLEX128", 19: "DT_HALF",
               22: "DT_UINT32", 23: "DT_UINT64"}
# tfdbg's TensorDebugMode (debug_event.proto), by number: the one home of these numbers.
NO_TENSOR, CURT_HEALTH, CONCISE_HEALTH, FULL_HEALTH, SHAPE, FULL_TENSOR = 1, 2, 3, 4, 5, 7
DEBUG_MODE_NAMES = {0: "UNSPECIFIED", NO_TENSOR: "NO_TENSOR", CURT_HEALTH: "CURT_HEALTH",
                    CONCISE_HEALTH: "CONCISE_HEALTH", FULL_HEALTH: "FULL_HEALTH", SHAPE: "SHAPE",
                    6: "FULL_NUMERICS", FULL_TENSOR: "FULL_TENSOR",
                    8: "REDUCE_INF_NAN_THREE_SLOTS"}
_NO_TENSOR, _CURT, _CONCISE, _FULL_TENSOR = NO_TENSOR, CURT_HEALTH, CONCISE_HEALTH, FULL_TENSOR
# Index of the dtype in the health vector, per TensorDebugMode (FULL_HEALTH=4:
# [tensor_id, device_id, dtype, rank, size, ...]; SHAPE=5: [tensor_id, dtype, ...]).
_DTYPE_INDEX = {FULL_HEALTH: 2, SHAPE: 1}
# What a trace or execution says of its dtype when no dtype is recorded:
# NO_TENSOR (1) records nothing; CURT_HEALTH (2) and CONCISE_HEALTH (3) summarise
# float tensors only, so a summary says "some float type"; no summary in those
# modes (and in FULL_HEALTH) says "not a float type".
DTYPE_UNKNOWN = "?"
DTYPE_SOME_FLOAT = "float"


# Layouts of health tensors met so far: (the bytes before the vector's values, their
# length). TF writes every health tensor of a mode alike (dtype, shape, then the values
# in field 4), so a record's tensor is its layout's prefix and values, checked with one
# comparison instead of a walk over its fields.
_LAYOUTS: list[tuple[bytes, int]] = []
_MAX_LAYOUTS = 8


def _vector_field(tensor_proto: bytes) -> list[tuple[int, int, int, int, int]] | None:
    """The health vector's field as ``message_fields`` gives it (number, wire type,
    length, tag position, end), as a list of that one field, where ``tensor_proto`` is
    a known layout's prefix followed by its values: the fields before it are then known
    to parse and to hold no field 4 or 6, so the walks below find this field first,
    as they would walking all fields. None for any other tensor (walked field by field)."""
    n = len(tensor_proto)
    for head, length in _LAYOUTS:
        if n == len(head) + length and tensor_proto.startswith(head):
            return [(tensor_proto[len(head) - 2] >> 3, LEN, length, 0, n)]
    fields = message_fields(tensor_proto, 0, n)
    if fields and len(_LAYOUTS) < _MAX_LAYOUTS:
        number, wire_type, length, tag_at, _end = fields[-1]
        head = tensor_proto[:n - length]
        # One-byte tag and length, and no other value field: the prefix says it all.
        if number in (4, 6) and wire_type == LEN and len(head) == tag_at + 2 and length < 0x80 \
                and not any(f[0] in (4, 6) and f[1] == LEN for f in fields[:-1]):
            _LAYOUTS.append((head, length))
    return None


def health_dtype(tensor_proto: bytes, mode: int) -> str:
    """The dtype a debug tensor of ``mode`` records: a ``DT_*`` name,
    ``DTYPE_SOME_FLOAT`` (a float type, which one not recorded),
    ``DTYPE_UNKNOWN`` (NO_TENSOR: nothing recorded) or "" (no debug tensor where
    the mode summarises float tensors only: a non-float output).

    FULL_HEALTH/SHAPE: a float64 health vector, values in ``tensor_content``
    (field 4) or packed ``double_val`` (field 6). FULL_TENSOR: the tensor itself,
    whose field 1 is its dtype.
    """
    if mode == _NO_TENSOR:
        return DTYPE_UNKNOWN
    if not tensor_proto:
        return ""
    if mode in (_CURT, _CONCISE):
        return DTYPE_SOME_FLOAT
    if mode == _FULL_TENSOR:
        for number, wire_type, value, _, _after in message_fields(tensor_proto, 0, len(tensor_proto)) or ():
            if number == 1 and wire_type == VARINT:
                return DTYPE_NAMES.get(value, f"DT_{value}")
        return DTYPE_UNKNOWN
    index = _DTYPE_INDEX.get(mode)
    if index is None:
        return DTYPE_UNKNOWN
    for number, wire_type, length, _, after in _vector_field(tensor_proto) or \
            message_fields(tensor_proto, 0, len(tensor_proto)) or ():
        if number in (4, 6) and wire_type == LEN:
            pos = after - length
            if length < 8 * (index + 1):
                return ""
            (value,) = struct.unpack_from("<d", tensor_proto, pos + 8 * index)
            if not math.isfinite(value):
                return ""  # a damaged or forged health tensor names no dtype
            return DTYPE_NAMES.get(int(value), f"DT_{int(value)}")
    return ""


# What a FULL_HEALTH or SHAPE debug tensor says of a tensor: (dtype, rank, size, shape).
HealthSpec = Optional[tuple[str, int, int, Optional[tuple[int, ...]]]]
# Index of (rank, size, first dimension) in the health vector of the modes that record them.
SHAPE_INDEX = {FULL_HEALTH: (3, 4, -1), SHAPE: (2, 3, 4)}
_SHAPE_DIMS = 6  # SHAPE records the first six dimensions (zero-padded)


def health_spec(tensor_proto: bytes, mode: int) -> HealthSpec:
    """(dtype, rank, size, shape or None) a FULL_HEALTH or SHAPE debug tensor records of a
    tensor; shape only from SHAPE (up to rank 6). None where the mode records none."""
    index = SHAPE_INDEX.get(mode)
    if index is None or not tensor_proto:
        return None
    for number, wire_type, length, _, after in _vector_field(tensor_proto) or \
            message_fields(tensor_proto, 0, len(tensor_proto)) or ():
        if number in (4, 6) and wire_type == LEN and length >= 8 * (index[1] + 1):
            values = struct.unpack_from(f"<{length // 8}d", tensor_proto, after - length)
            if not all(math.isfinite(v) for v in values):
                return None
            rank, size = int(values[index[0]]), int(values[index[1]])
            shape = None
            if index[2] > 0 and 0 <= rank <= _SHAPE_DIMS and len(values) >= index[2] + rank:
                shape = tuple(int(v) for v in values[index[2]:index[2] + rank])
            return health_dtype(tensor_proto, mode), rank, size, shape
    return None


def _digest(data: bytes) -> int:
    # Deterministic (unlike hash()): digests are cached and compared across processes.
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little") or 1


def health_digest(tensor_proto: bytes, mode: int) -> int:
    """A digest of what a debug tensor says of the traced tensor's value, the same for
    two traces of one tensor: FULL_HEALTH/SHAPE's vector less its first element (the
    tensor id, which names the traced output), FULL_TENSOR's whole tensor. 0 where the
    mode records too little to tell two tensors apart (NO_TENSOR, CURT/CONCISE_HEALTH).
    Its low byte carries the tensor's rank (``digest_rank``).

    An op grappler removed leaves its debug node reading its input's tensor, so its
    digest equals its input's."""
    if not tensor_proto:
        return 0
    if mode == _FULL_TENSOR:
        return _with_rank(_digest(tensor_proto), _tensor_proto_rank(tensor_proto))
    if mode not in _DTYPE_INDEX:
        return 0
    for number, wire_type, length, _, after in _vector_field(tensor_proto) or \
            message_fields(tensor_proto, 0, len(tensor_proto)) or ():
        if number in (4, 6) and wire_type == LEN and length > 8:
            rank = None
            at = after - length + 8 * (_DTYPE_INDEX[mode] + 1)  # the rank follows the dtype
            if at + 8 <= after:
                (value,) = struct.unpack_from("<d", tensor_proto, at)
                rank = int(value) if math.isfinite(value) and 0 <= value < 255 else None
            zeros = mode == FULL_HEALTH and _all_zeros(tensor_proto, after - length, after)
            return _with_rank(_digest(tensor_proto[after - length + 8:after]), rank, zeros)
    return 0


# FULL_HEALTH's vector: [tensor_id, device_id, dtype, rank, size, -inf, +inf, nan,
# negative, zero, positive], as float64s.
_SIZE_INDEX, _ZERO_INDEX = 4, 9
_ZEROS_BIT = 0x100


def _all_zeros(tensor_proto: bytes, start: int, end: int) -> bool:
    """Whether a FULL_HEALTH vector at ``tensor_proto[start:end]`` counts every element zero."""
    if start + 8 * (_ZERO_INDEX + 1) > end:
        return False
    (size,) = struct.unpack_from("<d", tensor_proto, start + 8 * _SIZE_INDEX)
    (zero,) = struct.unpack_from("<d", tensor_proto, start + 8 * _ZERO_INDEX)
    return bool(size > 0 and zero == size)


def _with_rank(digest: int, rank: int | None, zeros: bool = False) -> int:
    # A digest's low byte is rank + 1 (0: not recorded) and its next bit says "all zeros",
    # so that two equal digests also tell the rank and zeroness of the one tensor they
    # record, with nothing more to carry or cache.
    code = 0 if rank is None else min(rank + 1, 255)
    return ((digest & ~0x1FF) | (_ZEROS_BIT if zeros else 0) | code) or 0x200


def digest_all_zeros(digest: int) -> bool:
    """Whether a ``health_digest`` records a tensor whose every element is zero (FULL_HEALTH
    only; False where not recorded)."""
    return bool(digest & _ZEROS_BIT)


def digest_rank(digest: int) -> int | None:
    """The rank of the tensor a ``health_digest`` records, or None if not recorded."""
    code = digest & 0xFF
    return code - 1 if digest and code else None


def _tensor_proto_rank(tensor_proto: bytes) -> int | None:
    """The rank in a TensorProto's ``tensor_shape`` (field 2: ``dim`` = 2, ``unknown_rank`` = 3)."""
    for number, wire_type, length, _, after in message_fields(tensor_proto, 0, len(tensor_proto)) or ():
        if number == 2 and wire_type == LEN:
            rank = 0
            for inner, inner_wire, value, _, _end in message_fields(tensor_proto, after - length, after) or ():
                if inner == 3 and inner_wire == VARINT and value:
                    return None
                if inner == 2 and inner_wire == LEN:
                    rank += 1
            return rank
    return 0  # no tensor_shape: a scalar
