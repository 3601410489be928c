/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _DRV_H
#define _DRV_H
#define DRV_NAME	"hdr-named"	/* the registered name */
#define DRV_DELAY_MS	(2 * 10)
#endif
