"""torch.distributed.checkpoint (DCP) planners for megazoo's chunk descriptions, and a safe reader.

DCP natively shards DTensor and ShardedTensor. Neither describes a ZeRO-1 range of a flattened
parameter, nor a vocabulary table whose padding must be dropped, so instead of wrapping tensors we
hand DCP the chunks directly: every `Piece` (global offsets, sizes, local view) becomes one
`WriteItem` of type SHARD with its `ChunkStorageMetadata`; on load the same chunk list goes to
DCP's own `create_read_items_for_chunk_list`, which intersects it with the saved chunks. DCP's
default global planning is kept: pieces that several ranks hold (tp-replicated norms, dp
replicas, the tied embedding copy) share (key, offsets) and are written once; its plan validation
rejects out-of-bounds, overlapping or incomplete chunk sets at save time.

Safety: DCP's tensor data is read with torch.load(weights_only=True), but its `.metadata` file is
a plain pickle. `SafeFileSystemReader` unpickles it with an allow-list of the DCP metadata classes
and a few torch/builtin types; anything else in the file is refused. The file's checksum is also
verified (manifest in meta.json) before it is opened.
"""

from __future__ import annotations

import io
import pathlib
import pickle

import torch
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner, DefaultSavePlanner
from torch.distributed.checkpoint.metadata import (ChunkStorageMetadata, Metadata, MetadataIndex,
                                                   StorageMeta, TensorProperties, TensorStorageMetadata)
from torch.distributed.checkpoint.planner import (LoadPlan, SavePlan, TensorWriteData, WriteItem,
                                                  WriteItemType)
from torch.distributed.checkpoint.planner_helpers import create_read_items_for_chunk_list

from megazoo.core.checkpoint.spec import Entry


class CheckpointError(RuntimeError, ValueError):
    """A checkpoint or model folder that cannot be saved or loaded, with the tensor or file at
    fault. The one such error in megazoo (zoo.io raises it too); a ValueError as well, since zoo.io's
    callers have always caught bad folders as ValueErrors."""


def _chunk(piece) -> ChunkStorageMetadata:
    return ChunkStorageMetadata(offsets=torch.Size(piece.offsets), sizes=torch.Size(piece.sizes))


class ChunkSavePlanner(DefaultSavePlanner):
    """Writes each Entry's pieces as DCP chunks of the entry's global tensor."""

    def __init__(self, entries: dict[str, Entry]):
        super().__init__(flatten_state_dict=False, flatten_sharded_tensors=False)
        self.entries = entries
        self._data = {}

    def set_up_planner(self, state_dict, storage_meta=None, is_coordinator: bool = False) -> None:
        self.state_dict, self.is_coordinator = {}, is_coordinator

    def create_local_plan(self) -> SavePlan:
        items = []
        for key, entry in self.entries.items():
            for piece in entry.pieces:
                offsets = torch.Size(piece.offsets)
                self._data[(key, offsets)] = piece.view
                items.append(WriteItem(
                    index=MetadataIndex(key, offsets), type=WriteItemType.SHARD,
                    tensor_data=TensorWriteData(chunk=_chunk(piece), size=torch.Size(entry.global_shape),
                                                properties=TensorProperties(dtype=entry.dtype))))
        self.plan = SavePlan(items)
        return self.plan

    def resolve_data(self, write_item: WriteItem) -> torch.Tensor:
        view = self._data[(write_item.index.fqn, write_item.index.offset)].detach()
        # torch.save writes a view's whole storage: give it a compact CPU copy instead
        if view.device.type != "cpu" or not view.is_contiguous() or view.untyped_storage().nbytes() != view.nbytes:
            view = view.to("cpu", copy=True, memory_format=torch.contiguous_format)
        return view


class ChunkLoadPlanner(DefaultLoadPlanner):
    """Reads, for each Entry, the parts of the saved chunks that overlap its pieces, in place."""

    def __init__(self, entries: dict[str, Entry]):
        super().__init__(flatten_state_dict=False, flatten_sharded_tensors=False)
        self.entries = entries

    def set_up_planner(self, state_dict, metadata: Metadata | None = None, is_coordinator: bool = False) -> None:
        self.state_dict, self.metadata, self.is_coordinator = {}, metadata, is_coordinator

    def create_local_plan(self) -> LoadPlan:
        items = []
        stored = self.metadata.state_dict_metadata
        for key, entry in self.entries.items():
            md = stored.get(key)
            if not isinstance(md, TensorStorageMetadata):
                raise CheckpointError(f"tensor {key!r} is not in the checkpoint")
            if tuple(md.size) != tuple(entry.global_shape):
                raise CheckpointError(f"tensor {key!r}: the checkpoint holds shape {list(md.size)}, "
                                      f"this run expects {list(entry.global_shape)}")
            if not entry.pieces:
                continue
            reads = create_read_items_for_chunk_list(key, md, [_chunk(p) for p in entry.pieces])
            covered = sum(int(torch.Size(r.lengths).numel()) for r in reads)
            wanted = sum(int(torch.Size(p.sizes).numel()) for p in entry.pieces)
            if covered != wanted:  # the saved chunks do not cover what this rank needs
                raise CheckpointError(f"tensor {key!r}: the checkpoint covers {covered} of the {wanted} "
                                      f"elements this rank needs (a shard is missing)")
            items += reads
        self.plan = LoadPlan(items)
        return self.plan

    def resolve_tensor(self, read_item) -> torch.Tensor:
        piece = self.entries[read_item.dest_index.fqn].pieces[read_item.dest_index.index]
        view = piece.view
        for d, (o, n) in enumerate(zip(read_item.dest_offsets, read_item.lengths)):
            view = view.narrow(d, o, n)
        return view

    def load_bytes(self, read_item, value: io.BytesIO) -> None:
        raise CheckpointError(f"{read_item.dest_index.fqn!r}: megazoo checkpoints store no pickled objects")


# ---------------------------------------------------------------------------------------------
# safe metadata loading

_ALLOWED = {
    "torch.distributed.checkpoint.metadata": {"Metadata", "TensorStorageMetadata", "BytesStorageMetadata",
                                              "ChunkStorageMetadata", "TensorProperties", "MetadataIndex",
                                              "StorageMeta", "_MEM_FORMAT_ENCODING"},
    "torch.distributed.checkpoint.filesystem": {"_StorageInfo"},
    "torch": {"Size", "strided"} | {str(d).split(".")[1] for d in (
        torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
        torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)},
    "torch.serialization": {"_get_layout"},  # a name -> torch.layout lookup, nothing else
    "pathlib": {"PosixPath", "WindowsPath", "Path", "PurePosixPath", "PureWindowsPath"},
    "collections": {"OrderedDict"},
}


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if name in _ALLOWED.get(module, ()):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name} (not a DCP metadata type)")


def safe_load_metadata(path: pathlib.Path) -> Metadata:
    with open(path, "rb") as f:
        try:
            md = _MetadataUnpickler(f).load()
        except Exception as e:
            raise CheckpointError(f"checkpoint metadata {path} cannot be read safely: {e}") from None
    if not isinstance(md, Metadata):
        raise CheckpointError(f"checkpoint metadata {path} does not hold DCP metadata")
    return md


def checked_metadata(folder: pathlib.Path, allowed=None) -> Metadata:
    """The checkpoint's DCP metadata, safely unpickled, once every data file it names is known to
    be a plain name inside `folder` (and, given `allowed`, a file of the manifest, so checksummed).
    Called before DCP's own load, so a refusal is one clean error rather than DCP's retries."""
    from megazoo.core.fs import inside

    if not inside(folder, ".metadata") or (allowed is not None and ".metadata" not in allowed):
        raise CheckpointError(f"checkpoint {folder}: its .metadata is not a checksummed file inside the folder; "
                              f"refusing to read it (the checkpoint is damaged or crafted)")
    md = safe_load_metadata(folder / ".metadata")
    for info in (md.storage_data or {}).values():
        name = getattr(info, "relative_path", None)
        if not inside(folder, name) or (allowed is not None and name not in allowed):
            raise CheckpointError(f"checkpoint metadata {folder / '.metadata'} names the data file "
                                  f"{str(name)[:120]!r}, which is not a file of the checkpoint {folder}; "
                                  f"refusing to read it (the checkpoint is damaged or crafted)")
    return md


class SafeFileSystemReader(FileSystemReader):
    """FileSystemReader whose `.metadata` pickle is loaded with an allow-list unpickler, and whose
    data files must be plain names inside the checkpoint folder (and, given `allowed`, files of
    its manifest, so checksummed): a crafted `.metadata` cannot point the reader elsewhere."""

    def __init__(self, path, allowed=None):
        super().__init__(path)
        self.allowed = None if allowed is None else set(allowed)

    def read_metadata(self, *args, **kwargs) -> Metadata:
        md = checked_metadata(pathlib.Path(self.path), self.allowed)
        if getattr(md, "storage_meta", None) is None:
            md.storage_meta = StorageMeta()
        md.storage_meta.load_id = self.load_id
        return md
