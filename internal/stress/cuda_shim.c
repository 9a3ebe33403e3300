//go:build cgo

// cuda_shim.c: dlopen of libcuda.so.1 and thin wrappers that Go can call.
#include <dlfcn.h>
#include "cuda_shim.h"


static void *cu_handle;
static const char *cu_missing;
static CUresult (*p_cuInit)(unsigned int);
static CUresult (*p_cuDeviceGetCount)(int *);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDeviceGetName)(char *, int, CUdevice);
static CUresult (*p_cuDeviceGetAttribute)(int *, int, CUdevice);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuDevicePrimaryCtxRelease)(CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*p_cuMemFree)(CUdeviceptr);
static CUresult (*p_cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
static CUresult (*p_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*p_cuMemsetD32)(CUdeviceptr, unsigned int, size_t);
static CUresult (*p_cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*p_cuModuleUnload)(CUmodule);
static CUresult (*p_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
	unsigned, unsigned, unsigned, CUstream, void **, void **);
static CUresult (*p_cuCtxSynchronize)(void);
static CUresult (*p_cuEventCreate)(CUevent *, unsigned int);
static CUresult (*p_cuEventRecord)(CUevent, CUstream);
static CUresult (*p_cuEventSynchronize)(CUevent);
static CUresult (*p_cuEventElapsedTime)(float *, CUevent, CUevent);
static CUresult (*p_cuEventDestroy)(CUevent);
static CUresult (*p_cuGetErrorString)(CUresult, const char **);
static CUresult (*p_cuGetErrorName)(CUresult, const char **);
static CUresult (*p_cuDeviceGetPCIBusId)(char *, int, CUdevice);
static CUresult (*p_cuDeviceTotalMem)(size_t *, CUdevice);
static CUresult (*p_cuMemGetInfo)(size_t *, size_t *);
static CUresult (*p_cuMemHostAlloc)(void **, size_t, unsigned int);
static CUresult (*p_cuMemFreeHost)(void *);
static CUresult (*p_cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
static CUresult (*p_cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
static CUresult (*p_cuMemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
static CUresult (*p_cuDeviceCanAccessPeer)(int *, CUdevice, CUdevice);
static CUresult (*p_cuCtxEnablePeerAccess)(CUcontext, unsigned int);
static CUresult (*p_cuCtxDisablePeerAccess)(CUcontext);

// cu_load opens lib and resolves every entry point: 0 ok, 1 no library, 2 a symbol missing.
int cu_load(const char *lib) {
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) return 1;
#define SYM2(p, name, alt) \
	*(void **)(&p) = dlsym(h, name); \
	if (!p && alt) *(void **)(&p) = dlsym(h, alt); \
	if (!p) { cu_missing = name; return 2; }
#define SYM(p, name) SYM2(p, name, (const char *)0)
	SYM(p_cuInit, "cuInit");
	SYM(p_cuDeviceGetCount, "cuDeviceGetCount");
	SYM(p_cuDeviceGet, "cuDeviceGet");
	SYM(p_cuDeviceGetName, "cuDeviceGetName");
	SYM(p_cuDeviceGetAttribute, "cuDeviceGetAttribute");
	SYM(p_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	SYM2(p_cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
	SYM(p_cuCtxSetCurrent, "cuCtxSetCurrent");
	SYM(p_cuMemAlloc, "cuMemAlloc_v2");
	SYM(p_cuMemFree, "cuMemFree_v2");
	SYM(p_cuMemcpyDtoD, "cuMemcpyDtoD_v2");
	SYM(p_cuMemcpyDtoH, "cuMemcpyDtoH_v2");
	SYM(p_cuMemsetD32, "cuMemsetD32_v2");
	SYM(p_cuModuleLoadData, "cuModuleLoadData");
	SYM(p_cuModuleUnload, "cuModuleUnload");
	SYM(p_cuModuleGetFunction, "cuModuleGetFunction");
	SYM(p_cuLaunchKernel, "cuLaunchKernel");
	SYM(p_cuCtxSynchronize, "cuCtxSynchronize");
	SYM(p_cuEventCreate, "cuEventCreate");
	SYM(p_cuEventRecord, "cuEventRecord");
	SYM(p_cuEventSynchronize, "cuEventSynchronize");
	SYM(p_cuEventElapsedTime, "cuEventElapsedTime");
	SYM2(p_cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
	SYM(p_cuGetErrorString, "cuGetErrorString");
	SYM(p_cuGetErrorName, "cuGetErrorName");
	SYM(p_cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId");
	SYM(p_cuDeviceTotalMem, "cuDeviceTotalMem_v2");
	SYM(p_cuMemGetInfo, "cuMemGetInfo_v2");
	SYM(p_cuMemHostAlloc, "cuMemHostAlloc");
	SYM(p_cuMemFreeHost, "cuMemFreeHost");
	SYM(p_cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
	SYM(p_cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
	SYM(p_cuMemcpyPeerAsync, "cuMemcpyPeerAsync");
	SYM(p_cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer");
	SYM(p_cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess");
	SYM(p_cuCtxDisablePeerAccess, "cuCtxDisablePeerAccess");
	cu_handle = h;
	return 0;
}
const char *cu_dlerror(void) { const char *e = dlerror(); return e ? e : "unknown dlopen error"; }
const char *cu_missing_symbol(void) { return cu_missing; }

CUresult w_cuInit(void) { return p_cuInit(0); }
CUresult w_cuDeviceGetCount(int *n) { return p_cuDeviceGetCount(n); }
CUresult w_cuDeviceGet(CUdevice *d, int i) { return p_cuDeviceGet(d, i); }
CUresult w_cuDeviceGetName(char *s, int n, CUdevice d) { return p_cuDeviceGetName(s, n, d); }
CUresult w_cuDeviceGetAttribute(int *v, int a, CUdevice d) { return p_cuDeviceGetAttribute(v, a, d); }
CUresult w_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { return p_cuDevicePrimaryCtxRetain(c, d); }
CUresult w_cuDevicePrimaryCtxRelease(CUdevice d) { return p_cuDevicePrimaryCtxRelease(d); }
CUresult w_cuCtxSetCurrent(CUcontext c) { return p_cuCtxSetCurrent(c); }
CUresult w_cuMemAlloc(CUdeviceptr *p, size_t n) { return p_cuMemAlloc(p, n); }
CUresult w_cuMemFree(CUdeviceptr p) { return p_cuMemFree(p); }
CUresult w_cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) { return p_cuMemcpyDtoD(d, s, n); }
CUresult w_cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { return p_cuMemcpyDtoH(d, s, n); }
CUresult w_cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n) { return p_cuMemsetD32(d, v, n); }
CUresult w_cuModuleLoadData(CUmodule *m, const char *img) { return p_cuModuleLoadData(m, img); }
CUresult w_cuModuleUnload(CUmodule m) { return p_cuModuleUnload(m); }
CUresult w_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *n) { return p_cuModuleGetFunction(f, m, n); }
CUresult w_cuCtxSynchronize(void) { return p_cuCtxSynchronize(); }
CUresult w_cuEventCreate(CUevent *e) { return p_cuEventCreate(e, 0); }
CUresult w_cuEventRecord(CUevent e) { return p_cuEventRecord(e, (CUstream)0); }
CUresult w_cuEventSynchronize(CUevent e) { return p_cuEventSynchronize(e); }
CUresult w_cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return p_cuEventElapsedTime(ms, a, b); }
CUresult w_cuEventDestroy(CUevent e) { return p_cuEventDestroy(e); }
CUresult w_cuDeviceGetPCIBusId(char *s, int n, CUdevice d) { return p_cuDeviceGetPCIBusId(s, n, d); }
CUresult w_cuDeviceTotalMem(size_t *b, CUdevice d) { return p_cuDeviceTotalMem(b, d); }
CUresult w_cuMemGetInfo(size_t *free, size_t *total) { return p_cuMemGetInfo(free, total); }
CUresult w_cuMemHostAlloc(void **p, size_t n) { return p_cuMemHostAlloc(p, n, 0); }
CUresult w_cuMemFreeHost(void *p) { return p_cuMemFreeHost(p); }
CUresult w_cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n) { return p_cuMemcpyHtoDAsync(d, s, n, (CUstream)0); }
CUresult w_cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n) { return p_cuMemcpyDtoHAsync(d, s, n, (CUstream)0); }
CUresult w_cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) {
	return p_cuMemcpyPeerAsync(d, dc, s, sc, n, (CUstream)0);
}
CUresult w_cuDeviceCanAccessPeer(int *ok, CUdevice d, CUdevice peer) { return p_cuDeviceCanAccessPeer(ok, d, peer); }
CUresult w_cuCtxEnablePeerAccess(CUcontext peer) { return p_cuCtxEnablePeerAccess(peer, 0); }
CUresult w_cuCtxDisablePeerAccess(CUcontext peer) { return p_cuCtxDisablePeerAccess(peer); }
const char *w_errName(CUresult r) { const char *s = 0; p_cuGetErrorName(r, &s); return s ? s : "CUDA_ERROR_UNKNOWN"; }
const char *w_errString(CUresult r) { const char *s = 0; p_cuGetErrorString(r, &s); return s ? s : "unknown error"; }

// The launchers keep the kernel argument arrays in C memory (cgo pointer rules).
CUresult launch_copy(CUfunction f, unsigned grid, unsigned block, CUdeviceptr dst,
	CUdeviceptr src, unsigned long long n) {
	void *args[3] = {&dst, &src, &n};
	return p_cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, (CUstream)0, args, (void **)0);
}
CUresult launch_fma(CUfunction f, unsigned grid, unsigned block, CUdeviceptr out,
	int iters, float a, float b) {
	void *args[4] = {&out, &iters, &a, &b};
	return p_cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, (CUstream)0, args, (void **)0);
}
CUresult launch_fma64(CUfunction f, unsigned grid, unsigned block, CUdeviceptr out,
	int iters, double a, double b) {
	void *args[4] = {&out, &iters, &a, &b};
	return p_cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, (CUstream)0, args, (void **)0);
}
CUresult launch_pattern_fill(CUfunction f, unsigned grid, unsigned block, CUdeviceptr buf,
	unsigned long long n16, int kind, unsigned pass, unsigned seed) {
	void *args[5] = {&buf, &n16, &kind, &pass, &seed};
	return p_cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, (CUstream)0, args, (void **)0);
}
CUresult launch_pattern_check(CUfunction f, unsigned grid, unsigned block, CUdeviceptr buf,
	unsigned long long n16, int kind, unsigned pass, unsigned seed, CUdeviceptr errs, unsigned max_errs) {
	void *args[7] = {&buf, &n16, &kind, &pass, &seed, &errs, &max_errs};
	return p_cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, (CUstream)0, args, (void **)0);
}
CUresult launch_none(CUfunction f) {
	return p_cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, (CUstream)0, (void **)0, (void **)0);
}
