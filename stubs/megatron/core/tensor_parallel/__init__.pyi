# megatron.core.tensor_parallel re-exports its mapping functions; its other
# names are untyped here.
from typing import Any

from megatron.core.tensor_parallel.mappings import (
    all_gather_last_dim_from_tensor_parallel_region as all_gather_last_dim_from_tensor_parallel_region,
)
from megatron.core.tensor_parallel.mappings import (
    all_to_all as all_to_all,
)
from megatron.core.tensor_parallel.mappings import (
    all_to_all_hp2sp as all_to_all_hp2sp,
)
from megatron.core.tensor_parallel.mappings import (
    all_to_all_sp2hp as all_to_all_sp2hp,
)
from megatron.core.tensor_parallel.mappings import (
    copy_to_tensor_model_parallel_region as copy_to_tensor_model_parallel_region,
)
from megatron.core.tensor_parallel.mappings import (
    gather_from_sequence_parallel_region as gather_from_sequence_parallel_region,
)
from megatron.core.tensor_parallel.mappings import (
    gather_from_tensor_model_parallel_region as gather_from_tensor_model_parallel_region,
)
from megatron.core.tensor_parallel.mappings import (
    reduce_from_tensor_model_parallel_region as reduce_from_tensor_model_parallel_region,
)
from megatron.core.tensor_parallel.mappings import (
    reduce_scatter_last_dim_to_tensor_parallel_region as reduce_scatter_last_dim_to_tensor_parallel_region,
)
from megatron.core.tensor_parallel.mappings import (
    reduce_scatter_to_sequence_parallel_region as reduce_scatter_to_sequence_parallel_region,
)
from megatron.core.tensor_parallel.mappings import (
    scatter_to_sequence_parallel_region as scatter_to_sequence_parallel_region,
)
from megatron.core.tensor_parallel.mappings import (
    scatter_to_tensor_model_parallel_region as scatter_to_tensor_model_parallel_region,
)

def __getattr__(name: str) -> Any: ...
