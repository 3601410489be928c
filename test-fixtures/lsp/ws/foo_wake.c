// SPDX-License-Identifier: GPL-2.0
/* dpmlens LSP fixture: the wake helper foo_core.c calls from its noirq callback. */
#include <linux/interrupt.h>
#include "foo.h"

void foo_arm_wake(struct foo *foo)
{
	if (device_may_wakeup(foo->dev))
		enable_irq_wake(foo->irq);
}
