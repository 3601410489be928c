// SPDX-License-Identifier: GPL-2.0
/* delay-beyond-spec: a constant argument decides the helper's condition, and a counted loop
 * repeats the helper (issue 31, max310x: max310x_resume() powers each port up with
 * `max310x_power(port, 1)`, whose `if (on) msleep(50);` then runs on every iteration: 50 ms
 * per port on every resume). The wait is a warning, per iteration; the suspend side passes
 * 0 and waits nothing. A loop that polls, a condition the constant does not decide, or a
 * short wait once per system sleep keep the quiet hint. */
#include <linux/delay.h>
#include <linux/serial_core.h>
#include <linux/spi/spi.h>

struct uartx_port {
	struct uart_port port;
	int index;
};

struct uartx {
	int nr;
	bool slow;
	struct uartx_port p[4];
};

static void uartx_update(struct uart_port *port, u8 reg, u8 mask, u8 val)
{
	writeb((readb(port->membase + reg) & ~mask) | val, port->membase + reg);
}

static void uartx_power(struct uart_port *port, int on)
{
	uartx_update(port, 0x1f, 0x40, on ? 0 : 0x40);
	if (on)
		/* expect: delay-beyond-spec(warning) */
		msleep(50);
}

static void uartx_reset(struct uart_port *port, int hard)
{
	writeb(1, port->membase);
	if (hard)
		/* expect: delay-beyond-spec(quiet) */
		msleep(60);
}

static void uartx_clock(struct uart_port *port)
{
	writeb(2, port->membase);
	/* expect: delay-beyond-spec(quiet) */
	msleep(25);
}

static int uartx_suspend(struct device *dev)
{
	struct uartx *s = dev_get_drvdata(dev);
	int i;

	for (i = 0; i < s->nr; i++)
		uartx_power(&s->p[i].port, 0);
	return 0;
}

static int uartx_resume(struct device *dev)
{
	struct uartx *s = dev_get_drvdata(dev);
	int i;

	for (i = 0; i < s->nr; i++) {
		uartx_power(&s->p[i].port, 1);
		uartx_reset(&s->p[i].port, s->slow);
		uartx_clock(&s->p[i].port);
	}
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(uartx_pm_ops, uartx_suspend, uartx_resume);

static struct spi_driver uartx_driver = {
	.driver = {
		.name = "uartx",
		.pm = pm_sleep_ptr(&uartx_pm_ops),
	},
};
module_spi_driver(uartx_driver);
