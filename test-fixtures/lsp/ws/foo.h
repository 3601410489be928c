/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FOO_H
#define FOO_H
struct foo {
	struct device *dev;
	void __iomem *base;
	int irq;
};

void foo_arm_wake(struct foo *foo);
#endif
