"""``spmd_types.codemods.rewrite``: what a Megatron call becomes, what stays as it was, and why.

Each test rewrites a small module and compares the whole result with the
expected text, so that the untouched lines, the comments and the imports are
checked as well as the call.  Every result is rewritten a second time, which
must change nothing.
"""

from __future__ import annotations

import textwrap
from pathlib import PurePath

import pytest

pytest.importorskip("libcst", reason="libcst is the codemods extra; make setup installs it")

from spmd_types.codemods.library_calls import Plan, lookup, plan
from spmd_types.codemods.names import resolve
from spmd_types.codemods.rewrite import Migration, migrate_source
from spmd_types.typesystem import EQUIVALENTS, type_arg


def migrate(code: str, path: str = "project/model.py") -> Migration:
    """Rewrite ``code`` as the file at ``path``; checks that a second run changes nothing."""
    migration = migrate_source(textwrap.dedent(code), PurePath(path))
    again = migrate_source(migration.code, PurePath(path))
    assert again.code == migration.code and not again.rewritten, "a second run changed the result"
    return migration


def reasons(migration: Migration) -> list[tuple[int, str, str]]:
    return [(f.line, f.function, f.reason or "") for f in migration.left]


def test_calls_become_the_equivalent_with_comments_and_layout_kept() -> None:
    migration = migrate('''\
        """A column-parallel block."""
        from megatron.core.tensor_parallel.mappings import (
            copy_to_tensor_model_parallel_region,
            gather_from_sequence_parallel_region,
        )


        def block(x, weight, tp_group):
            # Identity forward, all-reduce backward.
            x = copy_to_tensor_model_parallel_region(x, group=tp_group)  # into the region
            y = gather_from_sequence_parallel_region(
                x @ weight,  # the local product
                tensor_parallel_output_grad=False,
                group=tp_group,  # the tensor-parallel group
            )
            return y
        ''')
    assert migration.code == textwrap.dedent('''\
        """A column-parallel block."""
        from spmd_types import I, R, S, all_gather, reinterpret


        def block(x, weight, tp_group):
            # Identity forward, all-reduce backward.
            x = reinterpret(x, tp_group, src=I, dst=R)  # into the region
            y = all_gather(
                x @ weight,  # the local product
                tp_group,  # the tensor-parallel group
                src=S(0),
                dst=I,
            )
            return y
        ''')
    assert [(f.line, f.function, f.became) for f in migration.rewritten] == [
        (10, "copy_to_tensor_model_parallel_region", "reinterpret(src=I, dst=R)"),
        (11, "gather_from_sequence_parallel_region", "all_gather(src=S(0), dst=I)"),
    ]
    assert migration.left == ()


@pytest.mark.parametrize("equivalent", [e for e in EQUIVALENTS.values() if e.function.startswith("megatron.")],
                         ids=lambda e: e.name)
def test_every_megatron_entry_becomes_its_equivalent_call(equivalent) -> None:
    """Each Megatron function, called with a group, becomes the core table's call, spelled as the core spells it."""
    arguments = "group, x" if equivalent.default_role is None else "x, group=group"
    migration = migrate(f'''\
        from megatron.core.tensor_parallel import {equivalent.name} as library_function


        def f(x, group):
            return library_function({arguments})
        ''')
    tensor = "x.flatten(0, -2)" if equivalent.reshapes_to_2d else "x"
    call = f"{equivalent.call}({tensor}, group, src={type_arg(equivalent.src)}, dst={type_arg(equivalent.dst)})"
    assert f"    return {call}\n" in migration.code
    assert "library_function" not in migration.code
    assert [f.became for f in migration.rewritten] == [equivalent.spelled(equivalent.dst)]


def test_a_left_out_or_none_group_is_the_librarys_default_group() -> None:
    migration = migrate('''\
        from megatron.core import parallel_state, tensor_parallel


        def f(x):
            a = tensor_parallel.reduce_from_tensor_model_parallel_region(x)
            return tensor_parallel.all_to_all_hp2sp(a + 1, group=None)
        ''')
    assert migration.code == textwrap.dedent('''\
        from megatron.core import parallel_state
        from spmd_types import I, P, S, all_reduce, all_to_all


        def f(x):
            a = all_reduce(x, parallel_state.get_tensor_model_parallel_group(), src=P, dst=I)
            return all_to_all((a + 1).flatten(0, -2), parallel_state.get_tensor_model_parallel_group(), src=S(-1), dst=S(0))
        ''')


def test_the_default_group_getter_is_imported_when_the_module_has_no_way_to_it() -> None:
    migration = migrate('''\
        from megatron.core.tensor_parallel import scatter_to_sequence_parallel_region as scatter


        def f(x):
            return scatter(x)
        ''')
    assert migration.code == textwrap.dedent('''\
        from megatron.core.parallel_state import get_tensor_model_parallel_group
        from spmd_types import I, S, convert


        def f(x):
            return convert(x, get_tensor_model_parallel_group(), src=I, dst=S(0))
        ''')


def test_names_are_resolved_through_module_aliases_and_relative_imports() -> None:
    migration = migrate('''\
        import megatron.core.tensor_parallel.mappings as mappings
        from ..tensor_parallel import mappings as local
        from .mappings import all_to_all as exchange


        def f(x, g):
            return mappings.all_gather_last_dim_from_tensor_parallel_region(local.all_to_all(g, exchange(g, x)), g)
        ''', path="site-packages/megatron/core/tensor_parallel/attention.py")
    assert migration.code == textwrap.dedent('''\
        from spmd_types import R, S, all_gather, all_to_all


        def f(x, g):
            return all_gather(all_to_all(all_to_all(x, g, src=S(0), dst=S(0)), g, src=S(0), dst=S(0)), g, src=S(-1), dst=R)
        ''')


def test_a_relative_import_is_followed_only_from_the_library_package_it_names() -> None:
    """``from .mappings import ...`` in another project's package is that project's own function."""
    code = '''\
        from .mappings import copy_to_tensor_model_parallel_region


        def f(x):
            return copy_to_tensor_model_parallel_region(x)
        '''
    assert migrate(code, path="myproject/layers.py").code == textwrap.dedent(code)
    assert migrate(code, path="vendor/megatron/core/tensor_parallel/layers.py").rewritten


def test_an_existing_import_of_spmd_types_is_reused() -> None:
    migration = migrate('''\
        import spmd_types as spmd
        from megatron.core.tensor_parallel import reduce_scatter_to_sequence_parallel_region


        def f(x, g):
            return reduce_scatter_to_sequence_parallel_region(x, g)
        ''')
    assert migration.code == textwrap.dedent('''\
        import spmd_types as spmd


        def f(x, g):
            return spmd.reduce_scatter(x, g, src=spmd.P, dst=spmd.S(0))
        ''')


def test_names_the_module_uses_are_not_shadowed() -> None:
    """``R`` and ``all_gather`` are the module's own here, so those come from ``spmd_types.`` in full."""
    migration = migrate('''\
        from megatron.core.tensor_parallel import all_gather_last_dim_from_tensor_parallel_region


        def all_gather(xs):
            return xs


        def f(x, g):
            R = all_gather_last_dim_from_tensor_parallel_region(x, g)
            return R
        ''')
    assert migration.code == textwrap.dedent('''\
        import spmd_types
        from spmd_types import S


        def all_gather(xs):
            return xs


        def f(x, g):
            R = spmd_types.all_gather(x, g, src=S(-1), dst=spmd_types.R)
            return R
        ''')


def test_an_import_still_in_use_or_exported_is_kept() -> None:
    migration = migrate('''\
        from megatron.core.tensor_parallel import copy_to_tensor_model_parallel_region, scatter_to_sequence_parallel_region

        __all__ = ["scatter_to_sequence_parallel_region"]
        REGION = copy_to_tensor_model_parallel_region


        def f(x, g):
            return scatter_to_sequence_parallel_region(copy_to_tensor_model_parallel_region(x, g), g)
        ''')
    assert migration.code.startswith(
        "from megatron.core.tensor_parallel import copy_to_tensor_model_parallel_region, "
        "scatter_to_sequence_parallel_region\n")
    assert "return convert(reinterpret(x, g, src=I, dst=R), g, src=I, dst=S(0))" in migration.code
    assert reasons(migration) == [(4, "copy_to_tensor_model_parallel_region",
                                   "it is used as a value, not called, so there is no call to rewrite")]


def test_calls_that_cannot_be_rewritten_exactly_are_left_with_the_reason() -> None:
    code = '''\
        import torch
        from megatron.core.tensor_parallel import all_to_all, gather_from_sequence_parallel_region
        from megatron.core.tensor_parallel import reduce_scatter_to_sequence_parallel_region


        def f(x, g, flag, args, sizes):
            gather_from_sequence_parallel_region(x, flag, g)
            gather_from_sequence_parallel_region(x, group=g, output_split_sizes=sizes)
            reduce_scatter_to_sequence_parallel_region(*args)
            all_to_all(None, x)
            all_to_all(make_group(), make_tensor())
            gather_from_sequence_parallel_region(x, True, g, None, False, 0)
            torch.distributed.all_reduce(x, group=g)
            torch.ops._c10d_functional.all_reduce(x, "sum", "tp")
        '''
    migration = migrate(code)
    assert migration.code == textwrap.dedent(code)
    assert reasons(migration) == [
        (7, "gather_from_sequence_parallel_region",
         "tensor_parallel_output_grad= is not literally True or False, and it decides the backward (dst=R or I)"),
        (8, "gather_from_sequence_parallel_region",
         "its argument output_split_sizes= has no counterpart in spmd_types.all_gather"),
        (9, "reduce_scatter_to_sequence_parallel_region",
         "its arguments are unpacked with * or **, so which argument is which is not known"),
        (10, "all_to_all", "its group is None or left out, and all_to_all has no default group"),
        (11, "all_to_all",
         "the group would move after the tensor, which changes the order in which the two arguments are evaluated"),
        (12, "gather_from_sequence_parallel_region",
         "it has more positional arguments than the 5 parameters it takes"),
        (13, "torch.distributed.all_reduce",
         "it overwrites its tensor in place, outside autograd, while spmd_types.all_reduce returns a new tensor and "
         "has a backward: no rewrite computes the same"),
        (14, "torch.ops._c10d_functional.all_reduce",
         "the op names its process group by a string, while spmd_types.all_reduce takes the group itself or a "
         "mesh-axis name"),
    ]


def test_a_comment_that_would_lose_its_place_keeps_the_call() -> None:
    code = '''\
        from megatron.core.tensor_parallel import gather_from_sequence_parallel_region


        def f(x, g):
            return gather_from_sequence_parallel_region(
                x,
                tensor_parallel_output_grad=True,  # reduce-scatter the gradient
                group=g,
            )
        '''
    migration = migrate(code)
    assert migration.code == textwrap.dedent(code)
    assert reasons(migration) == [(5, "gather_from_sequence_parallel_region",
                                   "a comment among its arguments would have no place in the new call")]


def test_a_full_line_comment_stays_above_its_argument() -> None:
    migration = migrate('''\
        from megatron.core.tensor_parallel import reduce_from_tensor_model_parallel_region


        def f(x, g):
            return reduce_from_tensor_model_parallel_region(
                x,
                # the group of the row-parallel layer
                group=g,
            )
        ''')
    assert migration.code == textwrap.dedent('''\
        from spmd_types import I, P, all_reduce


        def f(x, g):
            return all_reduce(
                x,
                # the group of the row-parallel layer
                g,
                src=P,
                dst=I,
            )
        ''')


def test_functions_of_the_same_name_from_elsewhere_are_not_touched() -> None:
    code = '''\
        from mylib import copy_to_tensor_model_parallel_region


        def reduce_from_tensor_model_parallel_region(x):
            return x


        def f(x):
            return reduce_from_tensor_model_parallel_region(copy_to_tensor_model_parallel_region(x))
        '''
    migration = migrate(code)
    assert migration.code == textwrap.dedent(code) and not migration.rewritten and not migration.left


def test_an_argument_evaluated_later_keeps_its_order_when_one_of_the_two_is_plain() -> None:
    call = migrate_source("from megatron.core.tensor_parallel import all_to_all\nall_to_all(g, make_tensor())\n")
    assert call.code.endswith("all_to_all(make_tensor(), g, src=S(0), dst=S(0))\n")


def test_lookup_reads_the_core_tables_under_every_name_a_caller_can_use() -> None:
    """The re-exporting package, the defining module and a relative import of it name the same entry."""
    names = ["megatron.core.tensor_parallel.all_to_all", "megatron.core.tensor_parallel.mappings.all_to_all"]
    entries = {lookup(resolve(name, ())) for name in names}
    relative = resolve(".mappings.all_to_all", ("venv", "megatron", "core", "tensor_parallel"))
    assert relative is not None and entries == {lookup(relative)} == {EQUIVALENTS[names[1]]}
    assert resolve("...x", ("one",)) is None


def test_a_plan_names_the_group_argument_or_the_default_getter() -> None:
    import libcst as cst

    equivalent = EQUIVALENTS["megatron.core.tensor_parallel.mappings.gather_from_sequence_parallel_region"]
    with_group = plan(equivalent, cst.parse_expression("f(x, False, g)"))
    without = plan(equivalent, cst.parse_expression("f(input_=x)"))
    assert with_group == Plan(equivalent, equivalent.variant.dst_if_false, 0, 2)
    assert without == Plan(equivalent, equivalent.dst, 0,
                           "megatron.core.parallel_state.get_tensor_model_parallel_group")


def test_torch_collectives_become_the_call_only_where_it_computes_the_same() -> None:
    """A group passed and nothing else: rewritten; a list, a tuple, a buffer or the default WORLD group: left, with why."""
    migration = migrate('''\
        import torch.distributed.nn.functional as dist_nn


        def f(x, out, group):
            a = dist_nn.all_reduce(x, group=group)
            b = dist_nn.all_gather(x, group=group)
            c = dist_nn.all_to_all_single(out, x, group=group)
            return dist_nn.all_reduce(a + c)
        ''')
    assert [(f.line, f.became) for f in migration.rewritten] == [(5, "all_reduce(src=P, dst=R)")]
    assert "    a = all_reduce(x, group, src=P, dst=R)\n" in migration.code
    reasons = {f.line: f.reason for f in migration.left}
    assert reasons[6] == "it returns a tuple of tensors, while spmd_types.all_gather takes and returns one stacked tensor"
    assert reasons[7] == "its argument output= has no counterpart in spmd_types.all_to_all"
    assert reasons[8] == "its group is None or left out, and all_reduce has no default group"
