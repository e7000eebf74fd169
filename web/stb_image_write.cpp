// The PNG writer the window's Export uses (ui/platform_window.cpp): in the browser, compiled from
// its header here, where the desktop links Debian's libstb.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
