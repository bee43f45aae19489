/* utf8.h — the one UTF-8 check, for trace text and safetensors names. */
#ifndef FP8CC_UTF8_H
#define FP8CC_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (n >= 1 bytes readable), 0 if it
 * is not one: a stray continuation byte, a cut sequence, an overlong form, a
 * surrogate (U+D800..U+DFFF) or a code point past U+10FFFF. */
static inline size_t
utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned lo = 0x80, hi = 0xBF;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, lo = s[0] == 0xE0 ? 0xA0 : lo, hi = s[0] == 0xED ? 0x9F : hi;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, lo = s[0] == 0xF0 ? 0x90 : lo, hi = s[0] == 0xF4 ? 0x8F : hi;
	else
		return 0;
	if (len > n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if ((s[k] & 0xC0) != 0x80)
			return 0;
	return len;
}

#endif
