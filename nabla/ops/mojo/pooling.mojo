# Max pooling's gradient for windows that tile the image (kernel == stride, no padding or
# dilation), on NHWC values: the common max_pool2d(x, 2) of a conv net.
#
# MAX's graph ops build it from strided slices, a first-maximum index and a broadcast in a 6-D
# view: 3.8 ms on W2's 64x28x28x32 activation. This kernel reads each tile once, keeps the scan
# in registers across the channels and writes every input position once: 0.7 ms.

from extensibility import register, InputTensor, OutputTensor
from max.algorithm.backend.cpu.parallelize import sync_parallelize
from std.math import isnan
from std.sys.info import simd_width_of


@register("nabla_max_pool_tiles_grad_nhwc")
struct MaxPoolTilesGradNHWC:
    """`g (N, OH, OW, C)` routed to each kh x kw tile's first maximum of `x (N, H, W, C)`.

    PyTorch's scan: a later element wins when it is greater or NaN (so the last NaN wins, else
    the first maximum). Rows and columns past the last whole tile get 0.
    """

    @staticmethod
    def execute[
        target: StaticString, kh: Int, kw: Int
    ](
        dx: OutputTensor,
        x: InputTensor[dtype = dx.dtype, rank = dx.rank, ...],
        g: InputTensor[dtype = dx.dtype, rank = dx.rank, ...],
    ) raises:
        comptime dtype = dx.dtype
        comptime width = simd_width_of[dtype]()
        var h = x.dim_size(1)
        var w = x.dim_size(2)
        var c = x.dim_size(3)
        var oh = g.dim_size(1)
        var ow = g.dim_size(2)
        var xp = x.unsafe_ptr()
        var gp = g.unsafe_ptr()
        var dp = dx.unsafe_ptr()

        # One task per (image, output row): its kh input rows.
        def row(r: Int) raises {var}:
            var b = r // oh
            var i = r % oh
            var image = b * h * w * c
            for j in range(ow):
                var gbase = ((b * oh + i) * ow + j) * c
                var tbase = image + (i * kh * w + j * kw) * c

                @__parameter
                def lanes[wd: Int](c0: Int):
                    var best = xp.unsafe_load[width=wd](tbase + c0)
                    var idx = SIMD[DType.int32, wd](0)
                    comptime for k in range(1, kh * kw):
                        var v = xp.unsafe_load[width=wd](tbase + ((k // kw) * w + k % kw) * c + c0)
                        var upd = v.gt(best) | isnan(v)
                        best = upd.select(v, best)
                        idx = upd.select(SIMD[DType.int32, wd](k), idx)
                    var gv = gp.unsafe_load[width=wd](gbase + c0)
                    var zero = SIMD[dtype, wd](0)
                    comptime for k in range(kh * kw):
                        var at = tbase + ((k // kw) * w + k % kw) * c + c0
                        dp.unsafe_store(at, idx.eq(SIMD[DType.int32, wd](k)).select(gv, zero))

                var c0 = 0
                while c0 + width <= c:
                    lanes[width](c0)
                    c0 += width
                while c0 < c:
                    lanes[1](c0)
                    c0 += 1
            # Columns past the last tile; after the last output row, the rows no tile covers.
            var last = h if i == oh - 1 else (i + 1) * kh
            for rr in range(i * kh, last):
                var start = rr * w * c if rr >= oh * kh else (rr * w + ow * kw) * c
                for e in range(start, (rr + 1) * w * c):
                    dp.unsafe_store(image + e, SIMD[dtype, 1](0))

        sync_parallelize(row, x.dim_size(0) * oh)
