#pragma once
/// Symbol visibility for the paraplan library (hidden by default, exported on purpose).

#if defined(PARAPLAN_STATIC_DEFINE)
#define PARAPLAN_EXPORT
#elif defined(_WIN32)
#if defined(PARAPLAN_BUILDING)
#define PARAPLAN_EXPORT __declspec(dllexport)
#else
#define PARAPLAN_EXPORT __declspec(dllimport)
#endif
#else
#define PARAPLAN_EXPORT __attribute__((visibility("default")))
#endif
