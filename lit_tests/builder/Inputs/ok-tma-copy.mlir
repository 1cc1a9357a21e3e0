// A 256x256 bf16 copy through shared memory with TMA: each block loads one
// 64x64 tile of the input with nvgpu.tma.async.load (host-encoded tensor
// map, trailing kernel argument declared by llm_fuse.tensor_maps), waits on
// an mbarrier, then stores the tile to the output with 16-byte vector
// stores. Signature: (tensor<256x256xbf16>) -> tensor<256x256xbf16>.
!map = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, swizzle = none, l2promo = none, oob = zero, interleave = none>
!bar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @tma_copy_module {
    memref.global "private" @tile : memref<64x64xbf16, 3> {alignment = 128}
    gpu.func @tma_copy(%in: memref<256x256xbf16>, %out: memref<256x256xbf16>,
                       %in_map: !map) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>,
                    known_grid_size = array<i32: 4, 4, 1>,
                    llm_fuse.tensor_maps = array<i32: 0>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %tile_bytes = arith.constant 8192 : index
      %ticks = arith.constant 10000000 : index
      %phase = arith.constant false
      %tid = gpu.thread_id x
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %col0 = arith.muli %bx, %c64 : index
      %row0 = arith.muli %by, %c64 : index
      %tile = memref.get_global @tile : memref<64x64xbf16, 3>
      %bar = nvgpu.mbarrier.create -> !bar
      %leader = arith.cmpi eq, %tid, %c0 : index
      scf.if %leader {
        nvgpu.mbarrier.init %bar[%c0], %c1 : !bar
        nvgpu.tma.prefetch.descriptor %in_map : !map
      }
      gpu.barrier
      scf.if %leader {
        nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %tile_bytes : !bar
        // Coordinates are innermost first: [column, row].
        nvgpu.tma.async.load %in_map[%col0, %row0], %bar[%c0] to %tile
            : !map, !bar -> memref<64x64xbf16, 3>
      }
      nvgpu.mbarrier.try_wait.parity %bar[%c0], %phase, %ticks : !bar
      // 512 vectors of 8 bf16 per tile, 4 per thread.
      scf.for %i = %c0 to %c4 step %c1 {
        %base = arith.muli %i, %c128 : index
        %v = arith.addi %base, %tid : index
        %r = arith.divui %v, %c8 : index
        %cv = arith.remui %v, %c8 : index
        %c = arith.muli %cv, %c8 : index
        %x = vector.load %tile[%r, %c] : memref<64x64xbf16, 3>, vector<8xbf16>
        %gr = arith.addi %row0, %r : index
        %gc = arith.addi %col0, %c : index
        vector.store %x, %out[%gr, %gc] : memref<256x256xbf16>, vector<8xbf16>
      }
      gpu.return
    }
  }
}
