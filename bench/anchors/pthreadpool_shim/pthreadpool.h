/* Stand-in for <pthreadpool.h>. Debian's xnnpack.h includes it, but libxnnpack-dev does not
 * depend on libpthreadpool-dev, which ships it. CMake puts this directory on the XNNPACK anchor's
 * include path only when the real header is missing. xnnpack.h needs nothing from it but the
 * opaque pool handle (declared exactly as pthreadpool declares it), and the anchor only ever
 * passes a null pool. */
#pragma once

typedef struct pthreadpool* pthreadpool_t;
