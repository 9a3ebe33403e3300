// cuda_shim.h: the slice of the CUDA driver API that internal/stress uses,
// resolved at run time with dlopen (no CUDA toolkit needed to build).
#ifndef GPUNODE_STRESS_CUDA_SHIM_H
#define GPUNODE_STRESS_CUDA_SHIM_H
#include <stddef.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUevent, *CUstream;

int cu_load(const char *lib);
const char *cu_dlerror(void);
const char *cu_missing_symbol(void);
CUresult w_cuInit(void);
CUresult w_cuDeviceGetCount(int *n);
CUresult w_cuDeviceGet(CUdevice *d, int i);
CUresult w_cuDeviceGetName(char *s, int n, CUdevice d);
CUresult w_cuDeviceGetAttribute(int *v, int a, CUdevice d);
CUresult w_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d);
CUresult w_cuDevicePrimaryCtxRelease(CUdevice d);
CUresult w_cuCtxSetCurrent(CUcontext c);
CUresult w_cuMemAlloc(CUdeviceptr *p, size_t n);
CUresult w_cuMemFree(CUdeviceptr p);
CUresult w_cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n);
CUresult w_cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n);
CUresult w_cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n);
CUresult w_cuModuleLoadData(CUmodule *m, const char *img);
CUresult w_cuModuleUnload(CUmodule m);
CUresult w_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *n);
CUresult w_cuCtxSynchronize(void);
CUresult w_cuEventCreate(CUevent *e);
CUresult w_cuEventRecord(CUevent e);
CUresult w_cuEventSynchronize(CUevent e);
CUresult w_cuEventElapsedTime(float *ms, CUevent a, CUevent b);
CUresult w_cuEventDestroy(CUevent e);
const char *w_errName(CUresult r);
const char *w_errString(CUresult r);
CUresult launch_copy(CUfunction f, unsigned grid, unsigned block, CUdeviceptr dst, CUdeviceptr src, unsigned long long n);
CUresult launch_fma(CUfunction f, unsigned grid, unsigned block, CUdeviceptr out, int iters, float a, float b);
CUresult w_cuDeviceGetPCIBusId(char *s, int n, CUdevice d);
CUresult w_cuDeviceTotalMem(size_t *b, CUdevice d);
CUresult w_cuMemGetInfo(size_t *free, size_t *total);
CUresult w_cuMemHostAlloc(void **p, size_t n);
CUresult w_cuMemFreeHost(void *p);
CUresult w_cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n);
CUresult w_cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n);
CUresult w_cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n);
CUresult w_cuDeviceCanAccessPeer(int *ok, CUdevice d, CUdevice peer);
CUresult w_cuCtxEnablePeerAccess(CUcontext peer);
CUresult w_cuCtxDisablePeerAccess(CUcontext peer);
CUresult launch_fma64(CUfunction f, unsigned grid, unsigned block, CUdeviceptr out, int iters, double a, double b);
CUresult launch_pattern_fill(CUfunction f, unsigned grid, unsigned block, CUdeviceptr buf,
	unsigned long long n16, int kind, unsigned pass, unsigned seed);
CUresult launch_pattern_check(CUfunction f, unsigned grid, unsigned block, CUdeviceptr buf,
	unsigned long long n16, int kind, unsigned pass, unsigned seed, CUdeviceptr errs, unsigned max_errs);
CUresult launch_none(CUfunction f);
#endif
