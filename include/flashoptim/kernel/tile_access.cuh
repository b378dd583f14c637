// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// Loads and stores of one thread's tile: N consecutive elements of a buffer.
// The vector path moves the tile in the widest accesses its byte count
// allows (16 bytes where it can: 16 one-byte codes, 8 bf16 values, 4 floats
// per access), so a warp's access is contiguous and every sector it touches
// is used. The scalar path handles a tensor's partial last tile and buffers
// that are aligned to their element type but not to the vector width.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "flashoptim/format/dtype.hpp"

// Every kernel includes this file (through tensor_table.cuh). The staged
// loads below are cp.async copies, which exist from sm_80 on: refuse older
// targets here, once, instead of failing in ptxas on an unknown instruction.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "flashoptim's kernels need sm_80 or newer (A100, H100/H200, Ada, Blackwell): the staged loads use cp.async. Set CMAKE_CUDA_ARCHITECTURES (or nvcc -arch) to 80 or higher."
#endif

namespace flashoptim::kernel {

namespace detail {
template <int Bytes>
struct vector_word;
template <>
struct vector_word<16> {
  using type = uint4;
};
template <>
struct vector_word<8> {
  using type = uint2;
};
template <>
struct vector_word<4> {
  using type = unsigned int;
};
template <>
struct vector_word<2> {
  using type = unsigned short;
};
template <>
struct vector_word<1> {
  using type = unsigned char;
};

// ld.global / st.global with the default cache policy. Pointers read from
// the tensor table are generic to the compiler, and generic accesses cost
// more; CUDA's __ldca / __stwb turn into strong (ordered) accesses instead.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE uint4 ld_global(const uint4* p) {
  uint4 v;
  asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE uint2 ld_global(const uint2* p) {
  uint2 v;
  asm("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE unsigned int ld_global(const unsigned int* p) {
  unsigned int v;
  asm("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE unsigned short ld_global(const unsigned short* p) {
  unsigned short v;
  asm("ld.global.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE unsigned char ld_global(const unsigned char* p) {
  unsigned short v;
  asm("ld.global.u8 %0, [%1];" : "=h"(v) : "l"(p));
  return static_cast<unsigned char>(v);
}
// The same loads, volatile: a step redone after a failed range check
// (kernel/range_checked.cuh) must read the bytes again rather than keep the
// first load's registers alive through the first attempt.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE uint4 ld_global_again(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE uint2 ld_global_again(const uint2* p) {
  uint2 v;
  asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE unsigned int ld_global_again(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE unsigned short ld_global_again(const unsigned short* p) {
  unsigned short v;
  asm volatile("ld.global.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE unsigned char ld_global_again(const unsigned char* p) {
  unsigned short v;
  asm volatile("ld.global.u8 %0, [%1];" : "=h"(v) : "l"(p));
  return static_cast<unsigned char>(v);
}
// A hint that a line will be read soon: into L2, no register written.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}
// Stores are volatile: they have no outputs the compiler could see used.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void st_global(uint4* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void st_global(uint2* p, uint2 v) {
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(v.x), "r"(v.y) : "memory");
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void st_global(unsigned int* p, unsigned int v) {
  asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void st_global(unsigned short* p, unsigned short v) {
  asm volatile("st.global.u16 [%0], %1;" ::"l"(p), "h"(v) : "memory");
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void st_global(unsigned char* p, unsigned char v) {
  asm volatile("st.global.u8 [%0], %1;" ::"l"(p), "h"(static_cast<unsigned short>(v)) : "memory");
}

// Asynchronous copies global -> shared (cp.async, sm_80+): the bytes land
// in shared memory without holding registers; a thread waits for its own
// groups (cp_async_wait) and then reads what it copied. .cg (L2 only) for
// 16 bytes, .ca for the smaller sizes, which .cg does not take.
template <int Bytes>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void cp_async(std::uint32_t dst, const void* src) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(dst), "l"(src), "n"(Bytes) : "memory");
  }
}
/// A group scale's 4-byte word (one per 32 elements: a 2048-element unit's
/// scales of one state are 256 bytes), copied as cp_async<4> but asking L2
/// to fetch the 256 bytes around it (`.L2::256B`). Each warp's 8 scales are
/// a 32-byte request; without the hint the units' scale buffers reached
/// DRAM as 32-byte reads and held a layout's memory pattern to ~81% of copy
/// bandwidth against ~89% with it (bench/results/2026-12-02/session4:
/// ceil_ab.cu, round G). The bytes copied are the same.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void cp_async_scale_word(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global.L2::256B [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
/// Waits until at most `Pending` of this thread's committed groups are in flight.
template <int Pending>
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
}
// ld.shared from a 32-bit shared-window address.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void ld_shared(std::uint32_t a, uint4& v) {
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a) : "memory");
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void ld_shared(std::uint32_t a, uint2& v) {
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(a) : "memory");
}
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void ld_shared(std::uint32_t a, unsigned int& v) {
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
}
// st.shared to a 32-bit shared-window address.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE void st_shared(std::uint32_t a, unsigned int v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
}
// The shared-window address of a generic pointer to shared memory.
FLASHOPTIM_DEVICE FLASHOPTIM_INLINE std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

constexpr int vector_width(int bytes) {
  return bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : bytes % 2 == 0 ? 2 : 1;
}
}  // namespace detail

/// How a tile of N elements of T is moved. Absent slots (none_t) move nothing.
template <class T, int N>
struct tile_access {
  static constexpr bool present = storage_bytes<T> != 0;
  static constexpr int bytes = present ? static_cast<int>(N * sizeof(T)) : 0;
  /// Bytes per access on the vector path; a buffer must be aligned to it.
  static constexpr int width = present ? detail::vector_width(bytes) : 1;
  static constexpr int words = present ? bytes / width : 0;
  using word = typename detail::vector_word<width>::type;

  /// Whether a buffer can take the vector path (the tile offsets within a
  /// tensor are multiples of N elements, hence of `width` bytes).
  FLASHOPTIM_HOST_DEVICE static bool vector_aligned(const void* p) {
    return !present || reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(width) == 0;
  }

  /// p points at the tile's first element and is `width`-aligned.
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void load(const T* p, T (&out)[N]) {
    if constexpr (present) {
      word w[words];
      const word* src = reinterpret_cast<const word*>(p);
      FLASHOPTIM_UNROLL for (int k = 0; k < words; ++k) w[k] = detail::ld_global(src + k);
      std::memcpy(out, w, bytes);
    }
  }
  /// The same through the read-only data path: for buffers no thread writes
  /// during the launch (gradients).
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void load_readonly(const T* p, T (&out)[N]) {
    if constexpr (present) {
      word w[words];
      const word* src = reinterpret_cast<const word*>(p);
      FLASHOPTIM_UNROLL for (int k = 0; k < words; ++k) w[k] = __ldg(src + k);
      std::memcpy(out, w, bytes);
    }
  }
  /// load (any buffer, gradients included) as a fresh read (see ld_global_again).
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void load_again(const T* p, T (&out)[N]) {
    if constexpr (present) {
      word w[words];
      const word* src = reinterpret_cast<const word*>(p);
      FLASHOPTIM_UNROLL for (int k = 0; k < words; ++k) w[k] = detail::ld_global_again(src + k);
      std::memcpy(out, w, bytes);
    }
  }
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void store(T* p, const T (&in)[N]) {
    if constexpr (present) {
      word w[words];
      std::memcpy(w, in, bytes);
      word* dst = reinterpret_cast<word*>(p);
      FLASHOPTIM_UNROLL for (int k = 0; k < words; ++k) detail::st_global(dst + k, w[k]);
    }
  }
  /// Whether the tile can go through cp.async staging (whole 4-, 8- or
  /// 16-byte words).
  static constexpr bool stageable = !present || width >= 4;
  /// Starts copying the tile at p (vector-aligned) to the shared slot at
  /// `slot` (`bytes` long, `width`-aligned); see detail::cp_async.
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void copy_async(const T* p, std::uint32_t slot) {
    if constexpr (present) {
      static_assert(stageable, "cp.async moves whole 4-, 8- or 16-byte words");
      const word* src = reinterpret_cast<const word*>(p);
      FLASHOPTIM_UNROLL for (int k = 0; k < words; ++k) detail::cp_async<width>(slot + k * width, src + k);
    }
  }
  /// copy_async of one group scale (N = 1, a 4-byte word) with the L2
  /// prefetch of detail::cp_async_scale_word.
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void copy_async_scale(const T* p, std::uint32_t slot) {
    if constexpr (present) {
      static_assert(N == 1 && bytes == 4, "one 4-byte scale");
      detail::cp_async_scale_word(slot, p);
    }
  }
  /// Reads the tile copy_async put in `slot` (after its group completed).
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void load_shared(std::uint32_t slot, T (&out)[N]) {
    if constexpr (present) {
      word w[words];
      FLASHOPTIM_UNROLL for (int k = 0; k < words; ++k) detail::ld_shared(slot + k * width, w[k]);
      std::memcpy(out, w, bytes);
    }
  }

  /// One element through ld.global / st.global (N = 1: scales).
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static T load_one(const T* p) {
    static_assert(N == 1, "one element");
    T out[1];
    load(p, out);
    return out[0];
  }
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static T load_one_again(const T* p) {
    static_assert(N == 1, "one element");
    T out[1];
    load_again(p, out);
    return out[0];
  }
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void store_one(T* p, T v) {
    static_assert(N == 1, "one element");
    const T in[1] = {v};
    store(p, in);
  }
  /// Elements [0, valid) one at a time; the rest of `out` is left as it is.
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void load_partial(const T* p, T (&out)[N], int valid) {
    if constexpr (present) {
      FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) if (i < valid) out[i] = p[i];
    }
  }
  FLASHOPTIM_DEVICE FLASHOPTIM_INLINE static void store_partial(T* p, const T (&in)[N], int valid) {
    if constexpr (present) {
      FLASHOPTIM_UNROLL for (int i = 0; i < N; ++i) if (i < valid) p[i] = in[i];
    }
  }
};

}  // namespace flashoptim::kernel
