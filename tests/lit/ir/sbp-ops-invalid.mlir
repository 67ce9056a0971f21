// Malformed boxing ops and meshes are refused with one line naming what is wrong.
// RUN: not %flowc build %s -O0 --emit ir --split-input-file 2>&1 | FileCheck %s
// a boxing op needs the module's mesh
// CHECK: local_slice: the module has no flow.mesh (compile with --ranks N)
func.func @main(%arg0: tensor<4xf32>) -> tensor<2xf32> {
  %0 = "flow.local_slice"(%arg0) {dim = 0, mesh_axis = -1} : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----
// mesh_axis names an axis of the mesh, or -1
// CHECK: all_gather: mesh_axis 1 is not -1 or an axis of the 1-axis mesh
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<8xf32> {
    %0 = "flow.all_gather"(%arg0) {dim = 0, mesh_axis = 1} : (tensor<4xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}

// -----
// a split dim divides into G equal chunks
// CHECK: local_slice: dim 0 (5) does not divide into 2 equal parts
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<5xf32>) -> tensor<2xf32> {
    %0 = "flow.local_slice"(%arg0) {dim = 0, mesh_axis = 0} : (tensor<5xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}

// -----
// the result type must be the local one
// CHECK: error: {{.*}}all_gather
module attributes {flow.mesh = array<i64: 4>} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<8xf32> {
    %0 = "flow.all_gather"(%arg0) {dim = 0, mesh_axis = 0} : (tensor<4xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}

// -----
// reduce is sum, max or min
// CHECK: all_reduce: attribute 'reduce' is "prod", expected sum|max|min
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "flow.all_reduce"(%arg0) {mesh_axis = 0, reduce = "prod"} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----
// all_to_all moves data between two different dims
// CHECK: all_to_all: split_dim and concat_dim are both 0
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %0 = "flow.all_to_all"(%arg0) {concat_dim = 0, mesh_axis = 0, split_dim = 0} : (tensor<4x2xf32>) -> tensor<4x2xf32>
    return %0 : tensor<4x2xf32>
  }
}

// -----
// mesh dims are positive
// CHECK: flow.mesh: mesh dim 0 is not positive
module attributes {flow.mesh = array<i64: 2, 0>} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    return %arg0 : tensor<4xf32>
  }
}

// -----
// only annotations are module attributes
// CHECK: unsupported module attribute 'sym_visibility'
module attributes {sym_visibility = "private"} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    return %arg0 : tensor<4xf32>
  }
}

// -----
// flow.sbp has one entry per mesh axis
// CHECK: flow.sbp has 1 entries but the module's mesh has 2 axes
module attributes {flow.mesh = array<i64: 2, 2>} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "flow.relu"(%arg0) {flow.sbp = ["B"]} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----
// the mesh belongs on the module
// CHECK: flow.mesh belongs on the module, not on a value
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "flow.relu"(%arg0) {flow.mesh = array<i64: 2>} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----
// send and recv: the peer is a rank of the mesh
// CHECK: send: peer 2 is not a rank of the 2-rank mesh
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    "flow.send"(%arg0) {peer = 2, tag = 0} : (tensor<4xf32>) -> ()
    return %arg0 : tensor<4xf32>
  }
}

// -----
// ... and not the program's own rank
// CHECK: recv: peer 1 is this program's own rank
module attributes {flow.mesh = array<i64: 2>, flow.rank = 1} {
  func.func @main() -> tensor<4xf32> {
    %0 = "flow.recv"() {dtype = f32, peer = 1, shape = array<i64: 4>, tag = 0} : () -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----
// tags are 0 .. 32767 (MPI's guaranteed bound)
// CHECK: recv: tag 40000 is not in 0..32767
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main() -> tensor<4xf32> {
    %0 = "flow.recv"() {dtype = f32, peer = 1, shape = array<i64: 4>, tag = 40000} : () -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----
// a recv's type is its dtype and shape
// CHECK: recv: shape dim 0 is negative (-4)
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main() -> tensor<4xf32> {
    %0 = "flow.recv"() {dtype = f32, peer = 1, shape = array<i64: -4>, tag = 0} : () -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
