package serverlab.mvc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import serverlab.contract.AbstractServerTest;
import serverlab.contract.Contract;
import serverlab.contract.ServerSettings;

/** The real server on a random port, driven over HTTP by the shared contract checks. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class MvcServerTest extends AbstractServerTest {

  /** The contract bean that main() registers, from WORKDAY_CALENDAR as set by the build. */
  @TestConfiguration(proxyBeanMethods = false)
  static class FromEnvironment {
    @Bean
    Contract contract() throws ServerSettings.InvalidSettingException {
      return ServerSettings.fromEnvironment(MvcServer.DISPLAY_NAME).contract();
    }
  }

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
