// Drawing primitives of the pixel renderers (render_pixels.h of Craftax and of Craftax-Classic):
// a Canvas that clips every draw to the pixels it holds, square texture blits, plain rectangles,
// reference table lookups and the night's noise. Every value drawn stays a whole number until the
// shading, so the blits are exact in float32.
#pragma once
#include "common.h"
#include "jax_random.h"

// The part of a frame that draws write: its rows [top, bottom) and columns [left, right), held
// at `pixels` row after row from (top, left), `stride` pixels a row, 3 floats a pixel. Every
// draw is clipped to it; coordinates are the whole frame's.
typedef struct {
    float* pixels;
    int stride;
    int top, left, bottom, right;
} Canvas;

CRAFTAX_FN float* canvas_pixel(const Canvas* canvas, int y, int x) {
    return canvas->pixels + ((long)(y - canvas->top) * canvas->stride + (x - canvas->left)) * 3;
}

// The part [*first, *end) of the span [start, start + size) that lies in [low, high), counted
// from start (empty when *end <= *first).
CRAFTAX_FN void clip_span(int start, int size, int low, int high, int* first, int* end) {
    *first = low > start ? low - start : 0;
    *end = high - start < size ? high - start : size;
}

// An index into a reference texture table as jnp indexing reads it: negative indices count from
// the end, and the rest are clamped into range.
CRAFTAX_FN int table_index(int32_t i, int n) {
    if (i < 0) i += n;
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

// One square texture over the frame (row-major, `width` pixels a row) at (top, left): `mode`
// says how it is drawn. The values stay whole numbers, so every mode is exact in float32.
enum DrawMode {
    DRAW_RGB,            // its RGB, opaque: `.set(texture[:, :, :3])`
    DRAW_PREMULTIPLIED,  // RGB times alpha, opaque: `.set(apply_alpha(texture))`
    DRAW_BLEND,          // where alpha is 1, its RGB; elsewhere what was there
    DRAW_EMPTY,          // black: the reference's empty icon
};

// A projectile's texture is flipped upside down when it moves down or right, then transposed
// when it moves sideways (the files draw an arrow pointing up).
enum { TEXTURE_FLIP = 1, TEXTURE_TRANSPOSE = 2 };

CRAFTAX_FN void draw_texture(const Canvas* canvas, int top, int left, const uint8_t* texture, int size, int mode,
                             int orientation) {
    int first_row, end_row, first_col, end_col;
    clip_span(top, size, canvas->top, canvas->bottom, &first_row, &end_row);
    clip_span(left, size, canvas->left, canvas->right, &first_col, &end_col);
    for (int i = first_row; i < end_row; i++) {
        float* row = canvas_pixel(canvas, top + i, left + first_col);
        for (int j = first_col; j < end_col; j++) {
            int a = i, b = j;
            if (orientation & TEXTURE_TRANSPOSE) a = j, b = i;
            if (orientation & TEXTURE_FLIP) a = size - 1 - a;
            float* out = row + (j - first_col) * 3;
            if (mode == DRAW_EMPTY) {
                out[0] = out[1] = out[2] = 0.0f;
                continue;
            }
            const uint8_t* px = texture + ((long)a * size + b) * 4;
            for (int ch = 0; ch < 3; ch++) {
                if (mode == DRAW_RGB) out[ch] = (float)px[ch];
                else if (mode == DRAW_PREMULTIPLIED) out[ch] = (float)(px[ch] * px[3]);
                else if (px[3]) out[ch] = (float)px[ch];
            }
        }
    }
}

// A rectangle of the frame filled with one value in every channel.
CRAFTAX_FN void fill_rectangle(const Canvas* canvas, int top, int left, int height, int width, float value) {
    int first_row, end_row, first_col, end_col;
    clip_span(top, height, canvas->top, canvas->bottom, &first_row, &end_row);
    clip_span(left, width, canvas->left, canvas->right, &first_col, &end_col);
    for (int i = first_row; i < end_row; i++) {
        float* row = canvas_pixel(canvas, top + i, left + first_col);
        for (int k = 0; k < (end_col - first_col) * 3; k++) row[k] = value;
    }
}

// The night's noise at pixel k of the view: jax.random.uniform(state_rng, view shape) * 95 + 32,
// the multiply-add fused as XLA fuses it.
CRAFTAX_FN float night_noise(Key key, uint32_t k) { return fmaf(uniform_at(key, k), 95.0f, 32.0f); }
