/*
 * bo_time: the units of time every module counts in.  Times are int64_t
 * nanoseconds on whatever clock the caller passes (policies/ never reads a
 * clock); these are the one definition of the conversions.
 */
#ifndef BO_TIME_H
#define BO_TIME_H

#define BO_NS_PER_MS 1000000LL
#define BO_NS_PER_S 1000000000LL

#endif
