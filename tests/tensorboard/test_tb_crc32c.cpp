// CRC-32C (Castagnoli) and TensorBoard's masked CRC against published values: the check value of
// the CRC catalogue and the test vectors of RFC 3720 (iSCSI), B.4.
#include <QtTest>
#include <string>

#include "crc32c.h"
#include "qt_test_main.h"

using namespace ddpdesk::tb;

class TestTbCrc32c : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void checkValue() { QCOMPARE(crc32c("123456789"), 0xE3069283u); }

  void rfc3720Vectors() {
    QCOMPARE(crc32c(std::string(32, '\0')), 0x8A9136AAu);
    QCOMPARE(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
    std::string ascending, descending;
    for (int i = 0; i < 32; ++i) {
      ascending.push_back(static_cast<char>(i));
      descending.push_back(static_cast<char>(31 - i));
    }
    QCOMPARE(crc32c(ascending), 0x46DD794Eu);
    QCOMPARE(crc32c(descending), 0x113FDB5Cu);
  }

  void emptyInputIsZero() { QCOMPARE(crc32c(std::string()), 0u); }

  // Split anywhere (across the four-byte steps too), continuing gives the one-pass CRC.
  void continuesAcrossPieces() {
    const std::string text = "The quick brown fox jumps over the lazy dog, 0123456789.";
    const std::uint32_t whole = crc32c(text);
    QCOMPARE(whole, 0xEA4A6ABDu);  // from a bit-at-a-time reference implementation
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
      const std::uint32_t first = crc32c(text.data(), cut);
      QCOMPARE(crc32c(text.data() + cut, text.size() - cut, first), whole);
    }
  }

  void masksAsTensorBoardDoes() {
    // 0xE3069283 >> 15 = 0x0001C60D; (0xE3069283 << 17) mod 2^32 = 0x25060000;
    // OR = 0x2507C60D; + 0xA282EAD8 = 0xC78AB0E5 (mod 2^32).
    QCOMPARE(mask_crc(0xE3069283u), 0xC78AB0E5u);
    // The addition wraps: 0xFFFFFFFF rotates to itself, + 0xA282EAD8 = 0xA282EAD7.
    QCOMPARE(mask_crc(0xFFFFFFFFu), 0xA282EAD7u);
    for (std::uint32_t v : {0u, 1u, 0x8A9136AAu, 0xE3069283u, 0xFFFFFFFFu})
      QCOMPARE(unmask_crc(mask_crc(v)), v);
  }
};

DDPDESK_TEST_GUILESS_MAIN(TestTbCrc32c)
#include "test_tb_crc32c.moc"
