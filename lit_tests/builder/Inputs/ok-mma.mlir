// C = A * B for A 16x16 f16, B 16x8 f16, C f32: one warp, one
// mma.sync m16n8k16 (nvgpu.mma.sync), fragments loaded per the PTX layout.
gpu.module @k {
  gpu.func @mma_16x8x16(%a: memref<16x16xf16>, %b: memref<16x8xf16>, %c: memref<16x8xf32>) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %lane = gpu.lane_id
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %group = arith.divui %lane, %c4 : index
    %tig = arith.remui %lane, %c4 : index
    %col = arith.muli %tig, %c2 : index
    %row8 = arith.addi %group, %c8 : index
    %col8 = arith.addi %col, %c8 : index
    %a0 = vector.load %a[%group, %col] : memref<16x16xf16>, vector<2xf16>
    %a1 = vector.load %a[%row8, %col] : memref<16x16xf16>, vector<2xf16>
    %a2 = vector.load %a[%group, %col8] : memref<16x16xf16>, vector<2xf16>
    %a3 = vector.load %a[%row8, %col8] : memref<16x16xf16>, vector<2xf16>
    %z = arith.constant dense<0.0> : vector<4x2xf16>
    %A0 = vector.insert %a0, %z [0] : vector<2xf16> into vector<4x2xf16>
    %A1 = vector.insert %a1, %A0 [1] : vector<2xf16> into vector<4x2xf16>
    %A2 = vector.insert %a2, %A1 [2] : vector<2xf16> into vector<4x2xf16>
    %A = vector.insert %a3, %A2 [3] : vector<2xf16> into vector<4x2xf16>
    %b0 = memref.load %b[%col, %group] : memref<16x8xf16>
    %c1 = arith.constant 1 : index
    %col1 = arith.addi %col, %c1 : index
    %b1 = memref.load %b[%col1, %group] : memref<16x8xf16>
    %col81 = arith.addi %col8, %c1 : index
    %b2 = memref.load %b[%col8, %group] : memref<16x8xf16>
    %b3 = memref.load %b[%col81, %group] : memref<16x8xf16>
    %zb = arith.constant dense<0.0> : vector<2x2xf16>
    %B0 = vector.insert %b0, %zb [0, 0] : f16 into vector<2x2xf16>
    %B1 = vector.insert %b1, %B0 [0, 1] : f16 into vector<2x2xf16>
    %B2 = vector.insert %b2, %B1 [1, 0] : f16 into vector<2x2xf16>
    %B = vector.insert %b3, %B2 [1, 1] : f16 into vector<2x2xf16>
    %C = arith.constant dense<0.0> : vector<2x2xf32>
    %D = nvgpu.mma.sync (%A, %B, %C) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %d0 = vector.extract %D[0] : vector<2xf32> from vector<2x2xf32>
    %d1 = vector.extract %D[1] : vector<2xf32> from vector<2x2xf32>
    vector.store %d0, %c[%group, %col] : memref<16x8xf32>, vector<2xf32>
    vector.store %d1, %c[%row8, %col] : memref<16x8xf32>, vector<2xf32>
    gpu.return
  }
}
