# Partial stubs for DeepSpeed: only the functions spmd-typecheck types (the
# sequence-parallel all-to-all of deepspeed.sequence.layer). Every other module
# of deepspeed is read from the installed package, as without these stubs.
