#include "ui/platform_window.h"

#include <optional>
#include <vector>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#ifdef __EMSCRIPTEN__
#include <GLES3/gl3.h>
#include <emscripten.h>
#else
#include <GL/gl.h>
#endif
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include <stb_image_write.h>

#include "files/output_file.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

// The shaders ImGui's OpenGL 3 backend compiles: desktop GL 3.0, or WebGL 2 in the browser.
#ifdef __EMSCRIPTEN__
constexpr const char* kGlslVersion = "#version 300 es";
#else
constexpr const char* kGlslVersion = "#version 130";
#endif

std::optional<std::string> captureFramebuffer(int w, int h, const std::string& path) {
  std::vector<unsigned char> pixels(static_cast<size_t>(w) * h * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  std::vector<unsigned char> flipped(pixels.size());  // GL's first row is the bottom one
  for (int y = 0; y < h; ++y) {
    std::copy_n(&pixels[static_cast<size_t>(h - 1 - y) * w * 4], static_cast<size_t>(w) * 4,
                &flipped[static_cast<size_t>(y) * w * 4]);
  }
  return writePng(path, w, h, flipped.data());
}
}  // namespace

std::optional<std::string> writePng(const std::string& path, int width, int height, const unsigned char* rgba) {
  // Encoded in memory and written as every output is: stbi_write_png ignores a failed write or
  // close, so a full disk (or /dev/full) left a truncated PNG and said it was written.
  std::string png;
  const auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (stbi_write_png_to_func(append, &png, width, height, 4, rgba, width * 4) == 0) {
    return "cannot encode the " + std::to_string(width) + "x" + std::to_string(height) + " PNG for '" + path + "'.";
  }
  return files::writeOutputFile(path, [&](std::ostream& out) { out << png; });
}

namespace {

// The window's frame loop state: what one frame needs between frames.
struct OpenWindow {
  GLFWwindow* window = nullptr;
  const WindowOptions* options = nullptr;
  const std::function<void()>* drawFrame = nullptr;
  Look appliedLook;
  int frames = 0;
  int readyFrames = 0;  // capture once readiness has held for a frame, so the image shows it
  bool headless = false;
  bool captured = false;
  std::string* error = nullptr;
};

// GLFW and ImGui up, or the reason not; `out` set on success.
bool openWindow(const WindowOptions& options, OpenWindow& out, std::string& error) {
  glfwSetErrorCallback([](int, const char*) {});
  if (!glfwInit()) {
    error =
        "cannot open a window: no display. Set DISPLAY, use 'xvfb-run -a shardscope ... "
        "--screenshot FILE' for a PNG, or train headlessly with 'shardscope run' (see --help).";
    return false;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  out.headless = !options.screenshotPath.empty();
  if (out.headless) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  out.window = glfwCreateWindow(options.width, options.height, options.title.c_str(), nullptr, nullptr);
  if (!out.window) {
    glfwTerminate();
    error = "cannot create an OpenGL 3 window (is a GL driver such as Mesa installed?).";
    return false;
  }
  glfwMakeContextCurrent(out.window);
  glfwSwapInterval(1);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  out.appliedLook = options.look ? *options.look : Look{};
  applyLook(out.appliedLook);
  ImGui_ImplGlfw_InitForOpenGL(out.window, true);  // installs ImGui's callbacks; a drop is not one of them
  if (options.droppedPaths) {  // in the browser, emscripten's GLFW writes a dropped file into the page first
    glfwSetWindowUserPointer(out.window, options.droppedPaths);
    glfwSetDropCallback(out.window, [](GLFWwindow* w, int count, const char** paths) {
      auto* dropped = static_cast<std::vector<std::string>*>(glfwGetWindowUserPointer(w));
      for (int i = 0; i < count; ++i) dropped->emplace_back(paths[i]);
    });
  }
  ImGui_ImplOpenGL3_Init(kGlslVersion);
  return true;
}

// One frame drawn (and captured where asked); false once the loop should end (a headless capture).
bool drawWindowFrame(OpenWindow& w) {
  const WindowOptions& options = *w.options;
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();  // the first call creates the GL objects, the font texture among them
  if (options.look && *options.look != w.appliedLook) {  // Ctrl +/-, H: a new atlas at the new size
    w.appliedLook = *options.look;
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    applyLook(w.appliedLook);
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  (*w.drawFrame)();
  ImGui::Render();
  int width = 0, height = 0;
  glfwGetFramebufferSize(w.window, &width, &height);
  glViewport(0, 0, width, height);
  glClearColor(0.08f, 0.09f, 0.10f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  ++w.frames;
  // Frames after the first few let ImGui settle its layout before a capture.
  const bool ready = options.readyToCapture && options.readyToCapture();
  w.readyFrames = ready ? w.readyFrames + 1 : 0;
  if (options.captureRequest && !options.captureRequest->empty()) {
    const auto problem = captureFramebuffer(width, height, *options.captureRequest);
    if (options.captureResult) *options.captureResult = problem ? *problem : "wrote " + *options.captureRequest;
    options.captureRequest->clear();
  }
  if (w.headless && w.frames > 3 && (w.readyFrames >= 2 || w.frames >= options.maxFrames)) {
    const auto problem = captureFramebuffer(width, height, options.screenshotPath);
    w.captured = !problem;
    if (problem) *w.error = *problem;
    return false;
  }
  glfwSwapBuffers(w.window);
  return true;
}

void closeWindow(OpenWindow& w) {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(w.window);
  glfwTerminate();
}

}  // namespace

int runWindow(const WindowOptions& options, const std::function<void()>& drawFrame, std::string& error) {
  OpenWindow w;
  w.options = &options;
  w.drawFrame = &drawFrame;
  w.error = &error;
  if (!openWindow(options, w, error)) return 1;
#ifdef __EMSCRIPTEN__
  // The browser draws a frame when it is ready for one; the page lives on after main returns.
  static OpenWindow page;
  page = w;
  emscripten_set_main_loop_arg([](void* open) { drawWindowFrame(*static_cast<OpenWindow*>(open)); }, &page, 0, 1);
  return 0;
#else
  while (!glfwWindowShouldClose(w.window)) {
    // Sleep while hidden or minimised; otherwise poll so live runs keep moving.
    if (!w.headless &&
        (glfwGetWindowAttrib(w.window, GLFW_ICONIFIED) || !glfwGetWindowAttrib(w.window, GLFW_VISIBLE))) {
      glfwWaitEventsTimeout(0.25);
      continue;
    }
    if (!drawWindowFrame(w)) break;
  }
  closeWindow(w);
  return w.headless && !w.captured ? 1 : 0;
#endif
}

}  // namespace shardscope::ui
