# Partial stubs for megatron-core: only the functions spmd-typecheck types (its
# mapping functions and the parallel-state group getters). Every other module of
# megatron is read from the installed package, as without these stubs.
