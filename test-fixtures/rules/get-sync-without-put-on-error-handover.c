// SPDX-License-Identifier: GPL-2.0
/* get-sync-without-put-on-error: a void CRTC op that takes a reference and never drops it,
 * on any path, in a file whose only put is the release half of another op's get. The
 * missing put on its error path is not the imbalance: the success path keeps the reference
 * for good as well, so "add a put on the error path" is not the patch (issue 20: judged
 * "a put only on the error path would fix a rare corner while missing the real imbalance").
 * A void function whose reference a put of the file does drop stays reported. */
#include <drm/drm_crtc.h>
#include <linux/pm_runtime.h>

struct lcd {
	struct device *dev;
	void __iomem *regs;
	bool queued;
};

static void lcd_crtc_enable(struct drm_crtc *crtc, struct lcd *lcd)
{
	pm_runtime_get_sync(lcd->dev);
	writel(1, lcd->regs);
}

static void lcd_crtc_disable(struct drm_crtc *crtc, struct lcd *lcd)
{
	writel(0, lcd->regs);
	pm_runtime_put_sync(lcd->dev);
}

static void lcd_crtc_set_timings(struct drm_crtc *crtc, struct lcd *lcd)
{
	int err;

	if (!pm_runtime_active(lcd->dev)) {
		/* ok: get-sync-without-put-on-error */
		err = pm_runtime_get_sync(lcd->dev);
		if (err)
			return;
	}
	writel(0x20, lcd->regs + 4);
}

/* the blit engine: its reference is dropped by the completion handler */
struct blit {
	struct device *dev;
	void __iomem *regs;
};

static void blit_kick(struct blit *b)
{
	int err;

	/* expect: get-sync-without-put-on-error(info) */
	err = pm_runtime_get_sync(b->dev);
	if (err < 0)
		return;
	writel(1, b->regs);
}

static irqreturn_t blit_done(int irq, void *data)
{
	struct blit *b = data;

	writel(0, b->regs + 8);
	pm_runtime_put_autosuspend(b->dev);
	return IRQ_HANDLED;
}

static const struct drm_crtc_helper_funcs lcd_helpers = {
	.atomic_enable = lcd_crtc_enable,
	.atomic_disable = lcd_crtc_disable,
	.mode_set_nofb = lcd_crtc_set_timings,
};
