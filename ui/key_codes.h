// The key codes shortcuts test against. ImGui 1.86's GLFW backend indexes io.KeysDown by GLFW's key
// codes and names only a few keys (ImGuiKey_*); these are GLFW's codes for the rest, and for the
// named ones the headless test context maps the way the backend does. No GLFW header in ui/ code.
#pragma once

namespace shardscope::ui::keys {

constexpr int kSpace = 32;
constexpr int kMinus = 45;
constexpr int kZero = 48;
constexpr int kEqual = 61;  // '=' and, with Shift, '+'
constexpr int kD = 68;
constexpr int kF = 70;
constexpr int kH = 72;
constexpr int kN = 78;
constexpr int kO = 79;
constexpr int kP = 80;
constexpr int kS = 83;
constexpr int kW = 87;
constexpr int kEscape = 256;
constexpr int kRight = 262;
constexpr int kLeft = 263;
constexpr int kPageUp = 266;
constexpr int kPageDown = 267;
constexpr int kHome = 268;
constexpr int kEnd = 269;
constexpr int kPadZero = 320;
constexpr int kPadSubtract = 333;
constexpr int kPadAdd = 334;

}  // namespace shardscope::ui::keys
