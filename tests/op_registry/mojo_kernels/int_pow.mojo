# y = x ** power for an integer power >= 1, elementwise (CPU).
#
# `power` is a compile-time parameter: nabla passes the op's static keyword arguments as the
# kernel's parameters (`int_pow(x, power=3)`).

from extensibility import register, InputTensor, OutputTensor


@register("nabla_int_pow")
struct IntPow:
    @staticmethod
    def execute[
        target: StaticString, power: Int
    ](
        output: OutputTensor,
        x: InputTensor[dtype = output.dtype, rank = output.rank, ...],
    ) raises:
        var src = x.unsafe_ptr()
        var dst = output.unsafe_ptr()
        for i in range(x.size()):
            var v = src[unsafe_offset=i]
            var acc = v
            for _ in range(power - 1):
                acc = acc * v
            dst[unsafe_offset=i] = acc
