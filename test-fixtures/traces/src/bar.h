/* SPDX-License-Identifier: GPL-2.0 */
int bar_suspend(struct device *dev);
