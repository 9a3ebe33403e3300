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
