# Convolution's weight gradient, stride 1, one group, on NHWC values.
#
# dW[ky, kx, c, o] = sum over n, y, x of xp[n, y + ky, x + kx, c] * g[n, y, x, o]: a product
# whose reduction runs over every output pixel. MAX's graph ops form it as a matmul of shifted
# rows (K*C, M) x (M, O) with M = N * Hp * Wp, a shape its matmul handles badly (9 x 57600 x 32
# for W2's first conv, 288 x 16384 x 64 for its second). Here each task sums its images'
# pixels into register tiles of CB input channels x OV vectors of output channels, reading the
# output gradient from cache once per tap and channel block (once in all for one input
# channel). Timed alone in one run, for W2's two convs: 0.56 and 3.5 ms on NHWC operands, where
# the graph-ops form took 4.6 and 5.6 on NCHW ones, permutes included (torch, another run: 0.6
# and 1.9).

from extensibility import register, InputTensor, OutputTensor
from max.algorithm.backend.cpu.parallelize import sync_parallelize
from std.utils import StaticTuple
from std.sys.info import simd_width_of


@register("nabla_conv2d_weight_grad_nhwc")
struct Conv2dWeightGradNHWC:
    """Per-task partial sums `(T, KH * KW * C, O)` of the weight gradient from the padded input
    `xp (N, Hp, Wp, C)` and the output gradient `g (N, OH, OW, O)`, with OH = Hp - KH + 1 and
    OW = Wp - KW + 1; task t takes images [t * N / T, (t + 1) * N / T)."""

    @staticmethod
    def execute[
        target: StaticString, kh: Int, kw: Int
    ](
        dw: OutputTensor[rank=3, ...],
        xp: InputTensor[dtype = dw.dtype, rank=4, ...],
        g: InputTensor[dtype = dw.dtype, rank=4, ...],
    ) raises:
        comptime dtype = dw.dtype
        comptime width = simd_width_of[dtype]()
        var tasks = dw.dim_size(0)
        var n = xp.dim_size(0)
        var hp = xp.dim_size(1)
        var wp = xp.dim_size(2)
        var c = xp.dim_size(3)
        var oh = g.dim_size(1)
        var ow = g.dim_size(2)
        var o = g.dim_size(3)
        var x_ptr = xp.unsafe_ptr()
        var g_ptr = g.unsafe_ptr()
        var d_ptr = dw.unsafe_ptr()

        def task(t: Int) raises {var}:
            var first = t * n // tasks
            var end = (t + 1) * n // tasks
            for k in range(kh * kw):
                var ky = k // kw
                var kx = k % kw

                # The (cb input channels) x (ov vectors of wd output channels) tile at (c0, o0).
                @__parameter
                def tile[cb: Int, ov: Int, wd: Int](c0: Int, o0: Int):
                    var acc = StaticTuple[SIMD[dtype, wd], cb * ov](fill=SIMD[dtype, wd](0))
                    for b in range(first, end):
                        for y in range(oh):
                            var xrow = ((b * hp + y + ky) * wp + kx) * c + c0
                            var grow = ((b * oh + y) * ow) * o + o0
                            for xx in range(ow):
                                var xs = xrow + xx * c
                                var gs = grow + xx * o
                                comptime for j in range(ov):
                                    var gv = g_ptr.unsafe_load[width=wd](gs + j * wd)
                                    comptime for i in range(cb):
                                        var xv = SIMD[dtype, wd](x_ptr[unsafe_offset = xs + i])
                                        acc[i * ov + j] = xv.fma(gv, acc[i * ov + j])
                    comptime for i in range(cb):
                        var row = (t * kh * kw * c + k * c + c0 + i) * o + o0
                        comptime for j in range(ov):
                            d_ptr.unsafe_store(row + j * wd, acc[i * ov + j])

                @__parameter
                def channels[ov: Int, wd: Int](o0: Int):
                    var c0 = 0
                    while c0 + 4 <= c:
                        tile[4, ov, wd](c0, o0)
                        c0 += 4
                    while c0 < c:
                        tile[1, ov, wd](c0, o0)
                        c0 += 1

                var o0 = 0
                while o0 + 4 * width <= o:
                    channels[4, width](o0)
                    o0 += 4 * width
                while o0 + 2 * width <= o:
                    channels[2, width](o0)
                    o0 += 2 * width
                while o0 + width <= o:
                    channels[1, width](o0)
                    o0 += width
                while o0 < o:
                    channels[1, 1](o0)
                    o0 += 1

        # One input channel (a grayscale image's first conv): the tile holds every tap, so the
        # output gradient is read once, not once per tap.
        def taps_task(t: Int) raises {var}:
            var first = t * n // tasks
            var end = (t + 1) * n // tasks

            @__parameter
            def tile[ov: Int, wd: Int](o0: Int):
                var acc = StaticTuple[SIMD[dtype, wd], kh * kw * ov](fill=SIMD[dtype, wd](0))
                for b in range(first, end):
                    for y in range(oh):
                        var xrow = (b * hp + y) * wp
                        var grow = ((b * oh + y) * ow) * o + o0
                        for xx in range(ow):
                            var gs = grow + xx * o
                            var gv = StaticTuple[SIMD[dtype, wd], ov](fill=SIMD[dtype, wd](0))
                            comptime for j in range(ov):
                                gv[j] = g_ptr.unsafe_load[width=wd](gs + j * wd)
                            comptime for k in range(kh * kw):
                                var xv = SIMD[dtype, wd](x_ptr[unsafe_offset = xrow + (k // kw) * wp + xx + k % kw])
                                comptime for j in range(ov):
                                    acc[k * ov + j] = xv.fma(gv[j], acc[k * ov + j])
                comptime for k in range(kh * kw):
                    comptime for j in range(ov):
                        d_ptr.unsafe_store((t * kh * kw + k) * o + o0 + j * wd, acc[k * ov + j])

            var o0 = 0
            while o0 + 2 * width <= o:
                tile[2, width](o0)
                o0 += 2 * width
            while o0 + width <= o:
                tile[1, width](o0)
                o0 += width
            while o0 < o:
                tile[1, 1](o0)
                o0 += 1

        if c == 1:
            sync_parallelize(taps_task, tasks)
        else:
            sync_parallelize(task, tasks)

