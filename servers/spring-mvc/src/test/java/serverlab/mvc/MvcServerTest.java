package serverlab.mvc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.boot.test.context.SpringBootTest.UseMainMethod.ALWAYS;
import static org.springframework.boot.test.context.SpringBootTest.WebEnvironment.RANDOM_PORT;

import java.io.IOException;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import serverlab.contract.AbstractServerTest;

/**
 * The real server on a random port, driven over HTTP by the shared contract checks. It starts
 * through main(), as in production: the settings come from the environment (WORKDAY_CALENDAR as
 * set by the build) and main() registers the contract bean.
 */
@SpringBootTest(webEnvironment = RANDOM_PORT, useMainMethod = ALWAYS)
class MvcServerTest extends AbstractServerTest {

  MvcServerTest(@LocalServerPort int port) {
    super(MvcServer.DISPLAY_NAME, port);
  }

  @Test
  void traceIsAnotherMethod() throws IOException {
    assertThat(rawRequest("TRACE", "/workday"))
        .startsWith("HTTP/1.1 405 ")
        .contains("\r\nAllow: GET, HEAD\r\n")
        .endsWith("Method Not Allowed");
  }
}
