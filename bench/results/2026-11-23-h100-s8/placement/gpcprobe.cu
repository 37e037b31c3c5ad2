// Which SM (and GPC, inferred from 16-CTA clusters) each block of a launch lands on.
#include <cstdio>
#include <vector>
#include <map>
#include <set>
#include <cuda_runtime.h>
__device__ unsigned smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
__global__ void probe(unsigned* out, long long spin) {
  long long t0 = clock64();
  while (clock64() - t0 < spin) {}
  if (threadIdx.x == 0) out[blockIdx.x] = smid();
}
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
cudaError_t launch(unsigned* d, int grid, int cluster, long long spin) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid); cfg.blockDim = dim3(128); cfg.dynamicSmemBytes = 200 * 1024;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = cluster; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = cluster > 1 ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, probe, d, spin);
}
int main() {
  unsigned* d; CK(cudaMalloc(&d, 4096 * 4));
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  std::vector<unsigned> h(4096);
  // GPC membership: clusters of 16 (then 18, 14, ...) fill a GPC each; the SMs of a cluster share one.
  std::map<unsigned, int> gpc_of;
  for (int cs : {16, 18, 14, 12, 10, 8, 6, 4, 2}) {
    int ncl = 0;
    cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(cs * 16); cfg.blockDim = dim3(128); cfg.dynamicSmemBytes = 200 * 1024;
    cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = cs;
    at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1; cfg.attrs = at; cfg.numAttrs = 1;
    if (cudaOccupancyMaxActiveClusters(&ncl, probe, &cfg) != cudaSuccess) { cudaGetLastError(); ncl = -1; }
    printf("cluster %d: max active clusters %d\n", cs, ncl);
  }
  for (int rep = 0; rep < 3; ++rep) {
    if (launch(d, 16 * 8, 16, 2000000)) { printf("16-cluster launch failed\n"); break; }
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h.data(), d, 16 * 8 * 4, cudaMemcpyDeviceToHost));
    for (int c = 0; c < 8; ++c) for (int i = 0; i < 16; ++i) gpc_of[h[c * 16 + i]] = c;  // label by cluster (approximate)
    printf("16-clusters rep %d:", rep);
    for (int c = 0; c < 8; ++c) { printf(" ["); for (int i = 0; i < 16; ++i) printf("%u%s", h[c * 16 + i], i < 15 ? "," : ""); printf("]"); }
    printf("\n");
  }
  for (int cluster : {1, 2}) for (int grid : {132, 128}) for (int rep = 0; rep < 2; ++rep) {
    CK(launch(d, grid, cluster, 2000000));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h.data(), d, grid * 4, cudaMemcpyDeviceToHost));
    printf("cluster %d grid %d rep %d: block->sm", cluster, grid, rep);
    for (int b = 0; b < grid; ++b) printf(" %u", h[b]);
    printf("\n");
  }
  return 0;
}
