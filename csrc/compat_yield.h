#ifndef FB_COMPAT_YIELD_H
#define FB_COMPAT_YIELD_H
void fb_set_yield(int spin);
int fb_yield_spins(void);
#endif
