#include "ui/platform_window.h"

#include <optional>
#include <vector>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <GL/gl.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include <stb_image_write.h>

#include "files/output_file.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {
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

int runWindow(const WindowOptions& options, const std::function<void()>& drawFrame, std::string& error) {
  glfwSetErrorCallback([](int, const char*) {});
  if (!glfwInit()) {
    error =
        "cannot open a window: no display. Set DISPLAY, use 'xvfb-run -a shardscope ... "
        "--screenshot FILE' for a PNG, or train headlessly with 'shardscope run' (see --help).";
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  const bool headless = !options.screenshotPath.empty();
  if (headless) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  GLFWwindow* window = glfwCreateWindow(options.width, options.height, options.title.c_str(), nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    error = "cannot create an OpenGL 3 window (is a GL driver such as Mesa installed?).";
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(1);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  Look appliedLook = options.look ? *options.look : Look{};
  applyLook(appliedLook);
  ImGui_ImplGlfw_InitForOpenGL(window, true);  // installs ImGui's callbacks; a drop is not one of them
  if (options.droppedPaths) {
    glfwSetWindowUserPointer(window, options.droppedPaths);
    glfwSetDropCallback(window, [](GLFWwindow* w, int count, const char** paths) {
      auto* dropped = static_cast<std::vector<std::string>*>(glfwGetWindowUserPointer(w));
      for (int i = 0; i < count; ++i) dropped->emplace_back(paths[i]);
    });
  }
  ImGui_ImplOpenGL3_Init("#version 130");

  int frames = 0;
  int readyFrames = 0;  // capture once readiness has held for a frame, so the image shows it
  bool captured = false;
  while (!glfwWindowShouldClose(window)) {
    // Sleep while hidden or minimised; otherwise poll so live runs keep moving.
    if (!headless && (glfwGetWindowAttrib(window, GLFW_ICONIFIED) || !glfwGetWindowAttrib(window, GLFW_VISIBLE))) {
      glfwWaitEventsTimeout(0.25);
      continue;
    }
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();  // the first call creates the GL objects, the font texture among them
    if (options.look && *options.look != appliedLook) {  // Ctrl +/-, H: a new atlas at the new size
      appliedLook = *options.look;
      ImGui_ImplOpenGL3_DestroyFontsTexture();
      applyLook(appliedLook);
      ImGui_ImplOpenGL3_CreateFontsTexture();
    }
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    drawFrame();
    ImGui::Render();
    int w = 0, h = 0;
    glfwGetFramebufferSize(window, &w, &h);
    glViewport(0, 0, w, h);
    glClearColor(0.08f, 0.09f, 0.10f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    ++frames;
    // Frames after the first few let ImGui settle its layout before a capture.
    const bool ready = options.readyToCapture && options.readyToCapture();
    readyFrames = ready ? readyFrames + 1 : 0;
    if (options.captureRequest && !options.captureRequest->empty()) {
      const auto problem = captureFramebuffer(w, h, *options.captureRequest);
      if (options.captureResult) *options.captureResult = problem ? *problem : "wrote " + *options.captureRequest;
      options.captureRequest->clear();
    }
    if (headless && frames > 3 && (readyFrames >= 2 || frames >= options.maxFrames)) {
      const auto problem = captureFramebuffer(w, h, options.screenshotPath);
      captured = !problem;
      if (problem) error = *problem;
      break;
    }
    glfwSwapBuffers(window);
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return headless && !captured ? 1 : 0;
}

}  // namespace shardscope::ui
